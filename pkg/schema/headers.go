package schema

import (
	"strconv"

	"github.com/invopop/jsonschema"

	"github.com/dpsim/dpsim/pkg/bus"
)

// headers is the schema of the NATS headers a message may carry (bus.Route, bus.HeaderSig): an
// object of header name -> value, one value per header. A plain message (no faults, no
// batching, no signing) has none.
func headers() *jsonschema.Schema {
	str := func(pattern, desc string) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "string", Pattern: pattern, Description: desc}
	}
	sender := `[a-z]+\.` + idPattern
	props := jsonschema.NewProperties()
	props.Set(bus.HeaderTo, str(SenderPattern, "the one subscriber <role>.<id> the message is for; the others ignore it (a link fault's own delivery)"))
	props.Set(bus.HeaderExcept, str(`^`+sender+`(,`+sender+`)*$`, "on a message for every subscriber: the comma-separated subscribers it is not for (they get deliveries of their own)"))
	props.Set(bus.HeaderAt, str(`^`+idPattern+`$`, "the logical step the message is delivered at, when later than its own step (a delayed message)"))
	props.Set(bus.HeaderMore, &jsonschema.Schema{Type: "string", Const: "1", Description: "more deliveries from this sender to the subscriber for that step follow"})
	props.Set(bus.HeaderGap, &jsonschema.Schema{Type: "string", Const: "1", Description: "no message: in lockstep, the sender has nothing more for the subscriber at that step (a lost or delayed message), so the subscriber applies its missing-input rule at once; vals is empty"})
	props.Set(bus.HeaderEpisodes, str(`^[1-9][0-9]*$`, "the message carries the same step of this many consecutive episodes (2.."+strconv.Itoa(bus.MaxEpisodes)+"), from ep, vals the episodes' vectors concatenated in episode order; only on a plain broadcast"))
	props.Set(bus.HeaderSig, str(`^[A-Za-z0-9_-]+$`, "signing on (dpsim run --sign, the default with an external server): the sender's ed25519 signature of the payload bytes, base64 (raw URL alphabet); receivers drop a message whose signature does not verify"))
	return &jsonschema.Schema{
		Version:     jsonschema.Version,
		Title:       "dpsim message headers",
		Description: "The NATS headers of a dpsim message (bus.Route, Dpsim-Sig), name -> value: the delivery metadata of link faults and batching, outside the payload. A plain message has none; other headers are ignored.",
		Type:        "object",
		Properties:  props,
		// A message for one subscriber has no exceptions; a batch is a plain broadcast.
		DependentSchemas: map[string]*jsonschema.Schema{
			bus.HeaderExcept: {Not: &jsonschema.Schema{Required: []string{bus.HeaderTo}}},
			bus.HeaderEpisodes: {Not: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
				{Required: []string{bus.HeaderTo}}, {Required: []string{bus.HeaderExcept}}, {Required: []string{bus.HeaderAt}},
				{Required: []string{bus.HeaderMore}}, {Required: []string{bus.HeaderGap}},
			}}},
		},
	}
}
