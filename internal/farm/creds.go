package farm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpsim/dpsim/pkg/bus"
)

// WorkerUserPrefix begins the account name of a worker on the coordinator's embedded server:
// the rest is the worker's identity, the last token of the subjects it may publish on.
const WorkerUserPrefix = "dpsim-farm-worker-"

// DefaultWorkerCreds is Config.WorkerCreds's default: credential files for that many workers
// started by hand on other hosts.
const DefaultWorkerCreds = 4

// WorkersDir is the directory under Config.Dir of the credential files of the workers started
// elsewhere, one per worker: w1.creds, w2.creds, ...
const WorkersDir = "workers"

// workerUser is the account of worker id: it may publish on its own subjects only (the server
// refuses the others), so a message's subject proves its sender; in a durable farm (queue) it
// may also pull chunks from the work queue's consumer and acknowledge them (bus.PullAPI), which
// lets it neither put nor delete one.
func workerUser(id string, queue bool) (bus.User, error) {
	var pub []string
	for _, v := range verbs {
		pub = append(pub, Subject(v, id))
	}
	if queue {
		pub = append(pub, bus.PullAPI(queueStream, queueConsumer)...)
	}
	return bus.NewUser(WorkerUserPrefix+id, pub, []string{inboxes})
}

// IdentityOf is the identity a worker publishes under: the one its account carries (an account
// of the coordinator's embedded server, WorkerUserPrefix + id: the server holds it to it), else
// - the shared account of an external server - its name made a subject token (self-declared:
// such a server cannot tell workers apart).
func IdentityOf(user, name string) string {
	if id, ok := strings.CutPrefix(user, WorkerUserPrefix); ok && ValidID(id) {
		return id
	}
	return SanitizeID(name)
}

// credentials are the accounts of a session's workers and where their files are.
type credentials struct {
	users []bus.User // every worker's account: the pool's, then the spawned workers'
	pool  []string   // the files of the pool (w1, w2, ...), under Dir/workers
	local []string   // the files of the spawned workers (local-0, ...), in a private directory
}

// newCredentials makes the accounts of n pool workers (w1..wn) and of spawn local workers
// (local-0..), for a durable farm's work queue when queue is set. With keep set (a durable
// farm: its Dir), a pool worker whose file keep/workers/wI.creds a coordinator before wrote
// keeps its password there, so that a worker started elsewhere serves the coordinator started
// again on the same --out without a new file.
func newCredentials(n, spawn int, queue bool, keep string) (*credentials, error) {
	cr := &credentials{}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("w%d", i)
		u, err := workerUser(id, queue)
		if err != nil {
			return nil, err
		}
		if keep != "" {
			if was, err := bus.ReadCredentials(filepath.Join(keep, WorkersDir, id+".creds")); err == nil && was.User == u.Name && was.Password != "" {
				u.Password = was.Password
			}
		}
		cr.users = append(cr.users, u)
	}
	for i := range spawn {
		u, err := workerUser(fmt.Sprintf("local-%d", i), queue)
		if err != nil {
			return nil, err
		}
		cr.users = append(cr.users, u)
	}
	return cr, nil
}

// write writes the pool's files under dir/workers (mode 0600) and the spawned workers' under
// private (removed with the session: nobody else needs them).
func (cr *credentials) write(dir, private string) error {
	for _, u := range cr.users {
		id := strings.TrimPrefix(u.Name, WorkerUserPrefix)
		path := filepath.Join(dir, WorkersDir, id+".creds")
		if strings.HasPrefix(id, "local-") {
			path = filepath.Join(private, id+".creds")
		}
		if err := bus.WriteCredentials(path, bus.Credentials{User: u.Name, Password: u.Password}); err != nil {
			return fmt.Errorf("farm: credentials of worker %s: %w", id, err)
		}
		if strings.HasPrefix(id, "local-") {
			cr.local = append(cr.local, path)
		} else {
			cr.pool = append(cr.pool, path)
		}
	}
	return nil
}

// removeStale removes credential files of an earlier session under dir/workers beyond this
// session's pool (their accounts are dead; a file left behind would only mislead).
func removeStale(dir string, keep []string) {
	old, _ := filepath.Glob(filepath.Join(dir, WorkersDir, "w*.creds"))
	for _, p := range old {
		stale := true
		for _, k := range keep {
			stale = stale && k != p
		}
		if stale {
			_ = os.Remove(p)
		}
	}
}

// keptDir is where a durable farm's pool credentials are kept across coordinators (its Dir;
// "" otherwise: new passwords every session).
func (c *Coordinator) keptDir() string {
	if c.dur == nil {
		return ""
	}
	return c.cfg.Dir
}
