package schema

import (
	"strconv"

	"github.com/invopop/jsonschema"

	"github.com/dpsim/dpsim/pkg/wire"
)

// headers is the schema of the NATS headers a message may carry (wire.Route, wire.HeaderSig): an
// object of header name -> value, one value per header. A plain message (no faults, no
// batching, no signing) has none.
func headers() *jsonschema.Schema {
	str := func(pattern, desc string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "string", Pattern: pattern, Description: desc}
	}
	sender := `[a-z]+\.` + idPattern
	props := jsonschema.NewProperties()
	props.Set(wire.HeaderTo, str(SenderPattern, "the one subscriber <role>.<id> the message is for; the others ignore it (a link fault's own delivery)"))
	props.Set(wire.HeaderExcept, str(`^`+sender+`(,`+sender+`)*$`, "on a message for every subscriber: the comma-separated subscribers it is not for (they get deliveries of their own)"))
	props.Set(wire.HeaderAt, str(`^`+idPattern+`$`, "the logical step the message is delivered at, when later than its own step (a delayed message)"))
	props.Set(wire.HeaderMore, &jsonschema.Schema{Type: "string", Const: "1", Description: "more deliveries from this sender to the subscriber for that step follow"})
	props.Set(wire.HeaderGap, &jsonschema.Schema{Type: "string", Const: "1", Description: "no message: in lockstep, the sender has nothing more for the subscriber at that step (a lost or delayed message), so the subscriber applies its missing-input rule at once; vals is empty"})
	props.Set(wire.HeaderEpisodes, str(`^[1-9][0-9]*$`, "the message carries the same step of this many consecutive episodes (2.."+strconv.Itoa(wire.MaxEpisodes)+"), from ep, vals the episodes' vectors concatenated in episode order; only on a plain broadcast"))
	props.Set(wire.HeaderSig, str(`^[A-Za-z0-9_-]+$`, "signing on (dpsim run --sign, the default with an external server): the sender's ed25519 signature of the payload bytes, base64 (raw URL alphabet); receivers drop a message whose signature does not verify"))
	return &jsonschema.Schema{
		Version:     jsonschema.Version,
		Title:       "dpsim message headers",
		Description: "The NATS headers of a dpsim message (wire.Route, Dpsim-Sig), name -> value: the delivery metadata of link faults and batching, outside the payload. A plain message has none; other headers are ignored.",
		Type:        "object",
		Properties:  props,
		// A message for one subscriber has no exceptions; a batch is a plain broadcast.
		DependentSchemas: map[string]*jsonschema.Schema{
			wire.HeaderExcept: {Not: &jsonschema.Schema{Required: []string{wire.HeaderTo}}},
			wire.HeaderEpisodes: {Not: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
				{Required: []string{wire.HeaderTo}}, {Required: []string{wire.HeaderExcept}}, {Required: []string{wire.HeaderAt}},
				{Required: []string{wire.HeaderMore}}, {Required: []string{wire.HeaderGap}},
			}}},
		},
	}
}
