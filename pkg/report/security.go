package report

// Security says how a run's traffic was secured, for the reader of summary.json (its
// "security" object) and of report.md (its Security section). The launcher fills it in; the
// fast engine has no traffic to secure and leaves Input.Security nil.
type Security struct {
	// Server is "embedded" (the launcher's own server, or servers with --cluster) or
	// "external" (--nats-url / NATS_URL).
	Server string `json:"server"`
	// Cluster is the number of embedded servers joined by routes (--cluster; 0 or 1: one).
	Cluster int `json:"nats_cluster"`
	// Permissions: per-role NATS users restrict who may publish and subscribe on what (the
	// embedded server always; an external server only as its operator configured it, which
	// the launcher cannot see: false).
	Permissions bool `json:"permissions"`
	// Signed: every data and control message carried an ed25519 signature of its sender
	// (--sign; on by default with an external server, --no-sign turns it off).
	Signed bool `json:"signed"`
	// Authenticated: receivers verified every message's signature and dropped what failed,
	// so the data used came from the processes the launcher started (Signed, with keys the
	// launcher handed out).
	Authenticated bool `json:"authenticated"`
	// TLS is "off", "auto" (the embedded server's throwaway CA) or "external" (--tls-ca ...).
	TLS string `json:"tls"`
	// Strict: a conflicting copy of a message (forged or corrupted traffic) fails the run
	// instead of degrading it (--strict).
	Strict bool `json:"strict"`
}
