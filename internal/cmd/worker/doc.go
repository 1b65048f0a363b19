// Package workercmd implements `dpsim worker`: a process on this or another host that plays
// chunks of episodes for a coordinator (`dpsim audit --dispatch`, `dpsim run --engine fast
// --dispatch`) through NATS, with the in-process fast engine (internal/farm.Serve, playing the
// kinds of internal/farm/kinds).
//
//	dpsim worker --server nats://coordinator-host:4222 --creds out/run/workers/w1.creds
//
// The credentials come from the file the coordinator wrote for this worker (mode 0600; one file,
// one account, one identity: internal/farm.IdentityOf), never from argv; the job (scenario,
// point, seed) comes from the coordinator over the bus. It serves every job of
// one coordinator and exits 0 when the coordinator says it is done or on SIGTERM / Ctrl-C; 1
// when it cannot connect or loses the server for good; 2 on a usage error.
package workercmd
