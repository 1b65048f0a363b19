package report

import (
	"fmt"
	"sort"
	"strings"
)

func (r *analysis) transportSection(b *strings.Builder) {
	in := r.in
	if len(in.Invalid) == 0 && len(in.Stale) == 0 && in.Timing == nil {
		return
	}
	b.WriteString("## Transport\n\n")
	r.invalidTable(b)
	staleTable(b, in.Stale)
	if in.Timing != nil {
		fl, err := flatten(in.Timing)
		if len(fl) == 1 && fl[0] == [2]string{"value", "null"} {
			fl = nil
		}
		if err != nil {
			fmt.Fprintf(b, "Timing statistics could not be printed: %v\n\n", err)
		} else if len(fl) > 0 {
			b.WriteString("Timing (as reported by the processes; overruns and late messages are not hidden):\n\n")
			var rows [][]string
			for _, kv := range fl {
				rows = append(rows, []string{kv[0], kv[1]})
			}
			table(b, []string{"statistic", "value"}, rows)
		}
	}
}

// invalidTable lists the invalid-message counters: messages that were wrong.
func (r *analysis) invalidTable(b *strings.Builder) {
	in := r.in
	if len(in.Invalid) == 0 {
		return
	}
	keys := make([]string, 0, len(in.Invalid))
	for k := range in.Invalid {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var rows [][]string
	for _, k := range keys {
		fl, err := flatten(in.Invalid[k])
		if err != nil {
			rows = append(rows, []string{k, "unprintable: " + err.Error()})
			continue
		}
		for _, kv := range fl {
			key := k
			if kv[0] != "value" {
				key += "." + kv[0]
			}
			rows = append(rows, []string{key, kv[1]})
		}
	}
	late := "they are counted as stale, below"
	if len(in.Stale) == 0 {
		late = "they are counted as stale; none were here"
	}
	fmt.Fprintf(b, "Invalid messages: messages that were wrong - malformed, corrupt (a wrong dimension, a non-finite value), "+
		"forged or failing signature verification - counted, logged and dropped by the receivers. "+
		"Messages that were merely late for their episode are not among them (%s).\n\n", late)
	table(b, []string{"counter", "count"}, rows)
}

// staleTable lists, per process, the messages that arrived for an episode the receiver had
// already finished.
func staleTable(b *strings.Builder, stale map[string]uint64) {
	if len(stale) == 0 {
		return
	}
	keys := make([]string, 0, len(stale))
	var total uint64
	for k, v := range stale {
		keys = append(keys, k)
		total += v
	}
	sort.Strings(keys)
	rows := make([][]string, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, []string{k, fmt.Sprint(stale[k])})
	}
	fmt.Fprintf(b, "Stale messages (%d): messages that arrived for an episode the receiver had already finished - late deliveries of a "+
		"previous episode's last steps (a delayed link, a lagging process). Each was compared with the copy of the same sender, episode and "+
		"step that the receiver used: one that differs is a conflict (forged or corrupted; see the link counters), one that agrees is a "+
		"timing effect, counted apart from the invalid ones and dropped, as the episode it belongs to is over.\n\n", total)
	table(b, []string{"process", "stale"}, rows)
}

// securitySection says how the run's traffic was secured (Input.Security; none for the fast
// engine, which has no traffic).
func (r *analysis) securitySection(b *strings.Builder) {
	s := r.in.Security
	if s == nil {
		return
	}
	b.WriteString("## Security\n\n")
	server := s.Server
	switch s.Server {
	case "embedded":
		server += " (the launcher's own NATS server"
		if s.Cluster > 1 {
			server += fmt.Sprintf("s: a cluster of %d joined by routes", s.Cluster)
		}
		server += ")"
	case "external":
		server += " (--nats-url / NATS_URL: a server the launcher does not control)"
	}
	perm := "no: any client of the server may publish on the run's subjects"
	if s.Permissions {
		perm = "yes: a NATS user per role, allowed to publish and subscribe only on its own subjects"
	} else if s.Server == "external" {
		perm = "not known: the operator of the external server configures them, the launcher cannot see them"
	}
	signed := "no"
	if s.Signed {
		signed = "yes: every data and control message carries an ed25519 signature of its sender"
	}
	auth := "no: a message claiming to come from a process is taken at its word"
	if s.Permissions {
		auth = "by the server only: no signatures, but the per-role permissions let only a process's own NATS user publish on its " +
			"subjects, and a receiver drops a message whose sender disagrees with its subject"
	}
	if s.Authenticated {
		auth = "yes: receivers verified every signature and dropped what failed, so the data used came from the processes the launcher started"
	}
	tls := s.TLS
	switch s.TLS {
	case "off", "":
		tls = "off: traffic is in clear text"
	case "auto":
		tls = "auto: the embedded server's throwaway CA"
	case "external":
		tls = "external: the CA and certificates given with --tls-ca"
	}
	strict := "no: a conflicting copy of a message degrades the run (counted as a conflict)"
	if s.Strict {
		strict = "yes (--strict): a conflicting copy of a message (forged or corrupted traffic) fails the run"
	}
	cluster := "1 server"
	if s.Cluster > 1 {
		cluster = fmt.Sprintf("%d servers", s.Cluster)
	}
	table(b, []string{"setting", "value"}, [][]string{{"server", server}, {"cluster", cluster}, {"permissions", perm},
		{"signed", signed}, {"authenticated", auth}, {"TLS", tls}, {"strict", strict}})
}
