package wire

// The coordination (ctl) protocol's words (Message.Kind on ctl subjects) beyond those of
// subject.go, and the launcher's sender name. The payloads of the ctl messages and their
// constructors are pkg/contract's (the protocol between the launcher and a role process,
// written once); the typed, validated subscriptions are pkg/bus's (SubscribeCtl).
const (
	// CtlEpisodeX0 starts an episode whose explicit x(0) travels on the private challenger
	// subject (Subjects.ChallengerX0), not on the sniffable ctl.episode.
	CtlEpisodeX0 = "episode-x0"
	// CtlEpisodes starts a group of consecutive episodes at once (episodes in flight):
	// Message.Episode is the first, Values [count]. CtlEpisodesX0 is the same for episodes
	// whose explicit x(0)s travel on the private challenger subject, one CtlX0 per episode.
	CtlEpisodes   = "episodes"
	CtlEpisodesX0 = "episodes-x0"
	// CtlFaults changes the run's link faults, partitions and crashes from episode
	// Message.Episode on (a live intervention, dpsim run --ui): Values [generation, digest]
	// name the file the launcher wrote beside the plan files (pkg/contract LiveFaults). It
	// travels on ctl.episode before the ctl.episode of that episode, so it is heard first.
	CtlFaults = "faults"
	// CtlX0 is the private challenger message carrying an episode's x(0).
	CtlX0 = "x0"
	// LauncherSender is the "from" of every coordination message the launcher sends.
	LauncherSender = "launcher.0"
)
