package busrec

import (
	"maps"
	"strings"

	"github.com/dpsim/dpsim/pkg/wire"
)

// The NATS headers of a message (the route of pkg/bus/route.go - wire.HeaderTo, HeaderAt,
// HeaderMore, HeaderGap, HeaderExcept, HeaderEpisodes - and the signature wire.HeaderSig of
// pkg/bus/sign.go) have no place in an MCAP Message record. A message that came with headers
// is recorded as two MCAP messages: first a HeaderRecord on the companion channel
// "<subject>#headers" (schema HeadersSchemaName), then the message itself on the subject's
// channel, whose payload stays the wire message's JSON of its docs/schema schema (what
// Foxglove and PlotJuggler read). A message without headers has no companion record.

// HeadersSuffix ends the topic of a subject's companion channel of NATS headers.
const HeadersSuffix = "#headers"

// HeadersSchemaName is the MCAP schema name of the companion channels.
const HeadersSchemaName = "dpsim/headers"

// HeaderRecord is the payload of a message on a "<subject>#headers" channel.
type HeaderRecord struct {
	// Seq is the sequence number, on the subject's channel, of the message these headers came
	// with: the message written right after this record.
	Seq uint32 `json:"seq"`
	// Headers are the NATS headers as received (name: values).
	Headers map[string][]string `json:"headers"`
	// AsSent says the message's recorded payload holds the bytes that were published (a JSON
	// message); false: a binary one recorded as its JSON equivalent, which its signature
	// (wire.HeaderSig, a signature of the binary bytes) does not verify.
	AsSent bool `json:"as_sent"`
}

// headersSchema is the JSON Schema of a HeaderRecord (encoding "jsonschema").
const headersSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "dpsim NATS headers of one recorded message",
  "description": "The NATS headers of the next message on the subject's channel (seq): Dpsim-To, Dpsim-At, Dpsim-More, Dpsim-Gap, Dpsim-Except, Dpsim-Episodes (docs/protocol.md) and Dpsim-Sig. as_sent: the message's payload is the bytes published (else a binary message recorded as JSON, whose signature does not verify).",
  "type": "object",
  "required": ["seq", "headers", "as_sent"],
  "properties": {
    "seq": {"type": "integer", "minimum": 1},
    "headers": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    "as_sent": {"type": "boolean"}
  },
  "additionalProperties": false
}
`

// IsHeaders reports whether topic is a companion channel of headers, and of which subject.
func IsHeaders(topic string) (subject string, ok bool) {
	return strings.CutSuffix(topic, HeadersSuffix)
}

// ReplayHeader is what a replay publishes with a message recorded with the headers h: all of
// them, except the signature of a message not recorded as sent (a binary one recorded as
// JSON), which would not verify - the replayed message goes unsigned instead (a receiver that
// verifies drops it as unsigned, which says what happened). Nil when nothing remains.
func ReplayHeader(h *HeaderRecord) map[string][]string {
	if h == nil || len(h.Headers) == 0 {
		return nil
	}
	if h.AsSent {
		return h.Headers
	}
	out := maps.Clone(h.Headers)
	for k := range out {
		if strings.EqualFold(k, wire.HeaderSig) {
			delete(out, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
