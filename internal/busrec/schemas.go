package busrec

import (
	"embed"
	"strings"

	"github.com/dpsim/dpsim/pkg/wire"
)

// schemaFiles are the message schemas of docs/schema a channel may carry (the copies in
// schemas/ are checked against docs/schema by TestSchemasMatchDocs).
//
//go:embed schemas/*.json
var schemaFiles embed.FS

// SchemaFor names the schema file (of docs/schema) of the messages on subject: data-<stream>.json
// for a data subject, result.json for ctl.result.<role>.<id>, ctl-<word>.json for ctl.ready,
// ctl.done, ctl.rejoin and ctl.stop, and message.json (any kind) for ctl.episode, which
// carries several kinds (episode, episodes, episode-x0, episodes-x0, faults), and anything else.
func SchemaFor(subject string) string {
	sub, err := wire.ParseSubject(subject)
	if err != nil {
		return "message.json"
	}
	if !sub.IsCtl() {
		if sub.Stream == sub.Role.Stream() && hasSchema("data-"+sub.Stream+".json") {
			return "data-" + sub.Stream + ".json"
		}
		return "message.json"
	}
	switch word := sub.Ctl[0]; {
	case word == wire.CtlResult && len(sub.Ctl) == 3:
		return "result.json"
	case (word == wire.CtlReady || word == wire.CtlDone || word == wire.CtlRejoin) && len(sub.Ctl) == 3,
		word == wire.CtlStop && len(sub.Ctl) == 1:
		return "ctl-" + word + ".json"
	}
	return "message.json"
}

func hasSchema(name string) bool {
	_, err := schemaFiles.ReadFile("schemas/" + name)
	return err == nil
}

// schemaData returns the schema file name's bytes.
func schemaData(name string) ([]byte, error) { return schemaFiles.ReadFile("schemas/" + name) }

// schemaName is the MCAP schema name of a schema file: "dpsim/" and the file name without .json.
func schemaName(file string) string { return "dpsim/" + strings.TrimSuffix(file, ".json") }
