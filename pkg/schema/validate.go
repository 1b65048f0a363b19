package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dpsim/dpsim/pkg/wire"
)

// Set is the compiled schemas of a schema directory (docs/schema), by file name.
type Set struct {
	byName map[string]*jsonschema.Schema
}

// Load compiles every *.json schema in dir.
func Load(dir string) (*Set, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("schema: no *.json in %s", dir)
	}
	c := jsonschema.NewCompiler()
	s := &Set{byName: map[string]*jsonschema.Schema{}}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		sch, err := c.Compile(abs)
		if err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		s.byName[filepath.Base(f)] = sch
	}
	return s, nil
}

// Validate checks the JSON document doc against the schema of file name (e.g. "ctl-done.json").
func (s *Set) Validate(name string, doc []byte) error {
	sch, ok := s.byName[name]
	if !ok {
		return fmt.Errorf("schema: no schema %s", name)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("schema %s: not one JSON document: %w", name, err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("schema %s: %w", name, err)
	}
	return nil
}

// ctlKinds are the kinds a message may have on each ctl word's subject.
var ctlKinds = map[string][]string{
	wire.CtlReady:   {wire.CtlReady},
	wire.CtlDone:    {wire.CtlDone},
	wire.CtlRejoin:  {wire.CtlRejoin},
	wire.CtlStop:    {wire.CtlStop},
	wire.CtlEpisode: {wire.CtlEpisode, wire.CtlEpisodeX0, wire.CtlEpisodes, wire.CtlEpisodesX0, wire.CtlFaults},
}

// ValidateMessage checks a message as it travels: subject, payload and NATS headers (name ->
// values; nil for none). It picks the schema the subject and the message's kind call for (a
// data stream's, a ctl word's, a result's, the challenger's x0), checks that the subject's
// sender is the message's, and validates the headers. A binary-encoded message
// (wire.BinaryMagic) is checked as its JSON encoding, which carries the same fields.
func (s *Set) ValidateMessage(subject string, data []byte, header map[string][]string) error {
	if err := s.validateHeaders(header); err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	if len(data) > 0 && data[0] == wire.BinaryMagic {
		var m wire.Message
		if err := wire.Decode(data, &m); err != nil {
			return fmt.Errorf("%s: %w", subject, err)
		}
		j, err := wire.EncodeJSON(nil, &m)
		if err != nil {
			return fmt.Errorf("%s: %w", subject, err)
		}
		data = j
	}
	name, run, sender, err := schemaOf(subject)
	if err != nil {
		return err
	}
	if name == "" { // a ctl subject: the kind picks the schema
		var m wire.Message
		if err := wire.Decode(data, &m); err != nil {
			return fmt.Errorf("%s: %w", subject, err)
		}
		word := strings.Split(subject, ".")[3]
		ok := false
		for _, k := range ctlKinds[word] {
			ok = ok || k == m.Kind
		}
		if !ok {
			return fmt.Errorf("%s: kind %q on ctl.%s (want one of %v)", subject, m.Kind, word, ctlKinds[word])
		}
		name = "ctl-" + m.Kind + ".json"
	}
	if err := s.Validate(name, data); err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	var m wire.Message
	if name == "result.json" {
		var r struct {
			Run string `json:"run"`
		}
		_ = json.Unmarshal(data, &r)
		m.Run = r.Run
	} else if err := wire.Decode(data, &m); err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	if m.Run != run {
		return fmt.Errorf("%s: run %q, the subject's run is %q", subject, m.Run, run)
	}
	if sender != "" && m.Sender != sender {
		return fmt.Errorf("%s: from %q, the subject's sender is %q", subject, m.Sender, sender)
	}
	return nil
}

// schemaOf names the schema of the messages on subject ("" for a ctl subject other than
// ctl.result: the kind decides), the run and the sender the subject names ("" when it names
// none).
func schemaOf(subject string) (name, run, sender string, err error) {
	if rest, ok := strings.CutPrefix(subject, wire.ChallengerPrefix); ok {
		if run, ok := strings.CutSuffix(rest, "."+wire.CtlX0); ok && wire.ValidToken(run) == nil {
			return "ctl-x0.json", run, wire.LauncherSender, nil
		}
		return "", "", "", fmt.Errorf("%s: not a challenger subject %s<run>.x0", subject, wire.ChallengerPrefix)
	}
	sub, err := wire.ParseSubject(subject)
	if err != nil {
		return "", "", "", err
	}
	if !sub.IsCtl() {
		if sub.Stream != sub.Role.Stream() {
			return "", "", "", fmt.Errorf("%s: %s publishes %q, not %q", subject, sub.Role, sub.Role.Stream(), sub.Stream)
		}
		return "data-" + sub.Stream + ".json", sub.Run, sub.Sender(), nil
	}
	word := sub.Ctl[0]
	switch {
	case word == wire.CtlResult && len(sub.Ctl) == 3:
		return "result.json", sub.Run, "", nil
	case (word == wire.CtlReady || word == wire.CtlDone || word == wire.CtlRejoin) && len(sub.Ctl) == 3:
		return "", sub.Run, sub.Ctl[1] + "." + sub.Ctl[2], nil
	case (word == wire.CtlEpisode || word == wire.CtlStop) && len(sub.Ctl) == 1:
		return "", sub.Run, wire.LauncherSender, nil
	}
	return "", "", "", fmt.Errorf("%s: no ctl subject of the protocol", subject)
}

// validateHeaders checks a message's headers against headers.json (the first value of each).
func (s *Set) validateHeaders(header map[string][]string) error {
	if len(header) == 0 {
		return nil
	}
	first := make(map[string]string, len(header))
	for k, vs := range header {
		if len(vs) > 0 {
			first[k] = vs[0]
		}
	}
	doc, err := json.Marshal(first)
	if err != nil {
		return err
	}
	return s.Validate("headers.json", doc)
}

// ValidateLines validates every non-blank line of a JSON-lines file against the schema of file
// name and returns how many it checked.
func (s *Set) ValidateLines(name, path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := s.Validate(name, line); err != nil {
			return n, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		n++
	}
	return n, nil
}
