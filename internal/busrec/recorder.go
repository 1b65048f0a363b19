package busrec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/foxglove/mcap/go/mcap"

	"github.com/dpsim/dpsim/internal/atomicfile"
	"github.com/dpsim/dpsim/pkg/wire"
)

// DefaultLimit is the recording's size limit when Options.Limit is 0: 256 MiB of messages.
const DefaultLimit = 256 << 20

// DefaultChunkSize is the uncompressed size at which a chunk is compressed and written to the
// file (what a recording killed mid-run can lose at most, besides the summary).
const DefaultChunkSize = 256 << 10

// perMessage is what one message costs in the file besides its payload, uncompressed: its
// record (opcode, length, channel, sequence, two times: 31 bytes) and its message index entry
// (16 bytes).
const perMessage = 47

// MetadataName is the name of the recording's metadata records: the run's (Options.Metadata),
// written first, and the recording's counts (messages, dropped), written at Close.
const MetadataName = "dpsim"

// Options configure a Recorder.
type Options struct {
	Path string
	Perm os.FileMode
	// Limit bounds the recorded messages, counted uncompressed with their records and index
	// entries (bytes; 0: DefaultLimit): the file stays below it plus its summary section. A
	// message past it is dropped and counted (Stats.Dropped).
	Limit int64
	// ChunkSize is the chunk size (bytes, uncompressed; 0: DefaultChunkSize).
	ChunkSize int64
	// Metadata is the run's metadata record (scenario, seed, run ids...).
	Metadata map[string]string
}

// Stats are what a recording holds and what it dropped (summary.json "recording").
type Stats struct {
	Messages uint64 // written
	Channels int
	Bytes    int64 // counted against the limit
	// Dropped are the messages past the limit, or after a write error; Undecodable those
	// that were no wire message (a binary payload wire.Decode refused): never written.
	Dropped     uint64
	Undecodable uint64
	// Headers counts the messages recorded with NATS headers: each is one more MCAP message,
	// its HeaderRecord on the companion channel (Channels counts subjects, not those).
	Headers uint64
}

// Recorder writes the messages it is handed to an MCAP file. Safe for concurrent use.
type Recorder struct {
	mu       sync.Mutex
	f        *os.File
	w        *mcap.Writer
	limit    int64
	channels map[string]uint16
	schemas  map[string]uint16
	seq      map[uint16]uint32
	st       Stats
	err      error // the first write error: the recording stops there
	closed   bool
	m        wire.Message
	buf      []byte
}

// Create creates (or empties) the file o.Path, never through a symbolic link, and writes the
// MCAP header and the run's metadata.
func Create(o Options) (*Recorder, error) {
	f, err := atomicfile.OpenNoFollow(o.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, o.Perm)
	if err == nil {
		err = f.Chmod(o.Perm)
	}
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", o.Path, err)
	}
	chunk := o.ChunkSize
	if chunk <= 0 {
		chunk = DefaultChunkSize
	}
	w, err := mcap.NewWriter(f, &mcap.WriterOptions{Chunked: true, ChunkSize: chunk, Compression: mcap.CompressionZSTD, IncludeCRC: true})
	if err == nil {
		err = w.WriteHeader(&mcap.Header{Profile: "", Library: "dpsim"})
	}
	if err == nil && len(o.Metadata) > 0 {
		err = w.WriteMetadata(&mcap.Metadata{Name: MetadataName, Metadata: o.Metadata})
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("recording %s: %w", o.Path, err)
	}
	limit := o.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Recorder{f: f, w: w, limit: limit, channels: map[string]uint16{}, schemas: map[string]uint16{}, seq: map[uint16]uint32{}}, nil
}

// Record writes one message received on subject at recv without NATS headers: RecordHeaders
// with none (the fast engine's bus, which has none).
func (r *Recorder) Record(subject string, data []byte, recv time.Time) {
	r.RecordHeaders(subject, nil, data, recv)
}

// RecordHeaders writes one message received on subject at recv (a binary one as its JSON
// encoding) and, when it came with NATS headers, a HeaderRecord of them on the companion
// channel "<subject>#headers" just before it; or counts the message as dropped past the limit
// or after a write error (its headers with it).
func (r *Recorder) RecordHeaders(subject string, header map[string][]string, data []byte, recv time.Time) {
	r.record(subject, header, true, data, recv)
}

// record is RecordHeaders of a message whose payload is what was sent unless sent is false (a
// recording copied by Recover: its HeaderRecord.AsSent).
func (r *Recorder) record(subject string, header map[string][]string, sent bool, data []byte, recv time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	schema := SchemaFor(subject)
	pub := uint64(recv.UnixNano())
	asSent := sent
	if schema != "result.json" {
		if err := wire.Decode(data, &r.m); err != nil {
			r.st.Undecodable++
			return
		}
		if r.m.SentUnixNano > 0 {
			pub = uint64(r.m.SentUnixNano)
		}
		if len(data) > 0 && data[0] == wire.BinaryMagic {
			j, err := wire.EncodeJSON(r.buf[:0], &r.m)
			if err != nil {
				r.st.Undecodable++
				return
			}
			r.buf, data, asSent = j, j, false
		}
	}
	var hdr []byte
	cost := int64(len(data) + perMessage)
	if len(header) > 0 {
		var err error
		if hdr, err = json.Marshal(HeaderRecord{Headers: header, AsSent: asSent}); err != nil {
			r.st.Undecodable++
			return
		}
		cost += int64(len(hdr) + perMessage + len(`"seq":4294967295,`))
	}
	if r.err != nil || r.st.Bytes+cost > r.limit {
		r.st.Dropped++
		return
	}
	if err := r.write(subject, schema, header, asSent, data, recv, pub); err != nil {
		r.err = fmt.Errorf("recording: %s: %w", subject, err)
		r.st.Dropped++
		return
	}
	r.st.Messages++
	if len(header) > 0 {
		r.st.Headers++
	}
	r.st.Bytes += cost
}

// write writes the message data on subject's channel, after its headers (none: nothing) on the
// companion channel.
func (r *Recorder) write(subject, schema string, header map[string][]string, asSent bool, data []byte, recv time.Time, pub uint64) error {
	id, err := r.channel(subject, schemaName(schema), "docs/schema/"+schema, func() ([]byte, error) { return schemaData(schema) })
	if err != nil {
		return err
	}
	if len(header) > 0 {
		hid, err := r.channel(subject+HeadersSuffix, HeadersSchemaName, "internal/busrec (docs/outputs.md)", func() ([]byte, error) { return []byte(headersSchema), nil })
		if err != nil {
			return err
		}
		hdr, err := json.Marshal(HeaderRecord{Seq: r.seq[id] + 1, Headers: header, AsSent: asSent})
		if err != nil {
			return err
		}
		r.seq[hid]++
		if err := r.w.WriteMessage(&mcap.Message{ChannelID: hid, Sequence: r.seq[hid], LogTime: uint64(recv.UnixNano()), PublishTime: pub, Data: hdr}); err != nil {
			return err
		}
	}
	r.seq[id]++
	return r.w.WriteMessage(&mcap.Message{ChannelID: id, Sequence: r.seq[id], LogTime: uint64(recv.UnixNano()), PublishTime: pub, Data: data})
}

// channel returns the channel of topic, writing it (and its schema, named name, whose bytes
// data returns) at its first message; file says where the schema is documented.
func (r *Recorder) channel(topic, name, file string, data func() ([]byte, error)) (uint16, error) {
	if id, ok := r.channels[topic]; ok {
		return id, nil
	}
	sid, ok := r.schemas[name]
	if !ok {
		b, err := data()
		if err != nil {
			return 0, err
		}
		sid = uint16(len(r.schemas) + 1)
		if err := r.w.WriteSchema(&mcap.Schema{ID: sid, Name: name, Encoding: "jsonschema", Data: b}); err != nil {
			return 0, err
		}
		r.schemas[name] = sid
	}
	if len(r.channels) >= 1<<16-1 {
		return 0, fmt.Errorf("more than %d channels", 1<<16-1)
	}
	id := uint16(len(r.channels) + 1)
	if err := r.w.WriteChannel(&mcap.Channel{ID: id, SchemaID: sid, Topic: topic, MessageEncoding: "json",
		Metadata: map[string]string{"schema_file": file}}); err != nil {
		return 0, err
	}
	r.channels[topic] = id
	if !strings.HasSuffix(topic, HeadersSuffix) {
		r.st.Channels++
	}
	return id, nil
}

// WriteMetadata writes a metadata record named name (the run's results of a point, written
// as it ends: PointMetadataName).
func (r *Recorder) WriteMetadata(name string, md map[string]string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("recording: metadata %s: the recording is closed", name)
	}
	if err := r.w.WriteMetadata(&mcap.Metadata{Name: name, Metadata: md}); err != nil {
		return fmt.Errorf("recording: metadata %s: %w", name, err)
	}
	return nil
}

// Attach writes data as an attachment named name of media type media (the run's scenario
// file: ScenarioAttachment), at most maxChunk bytes (what Scan reads back).
func (r *Recorder) Attach(name, media string, data []byte, created time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return fmt.Errorf("recording: attachment %s: the recording is closed", name)
	case len(data) > maxChunk:
		return fmt.Errorf("recording: attachment %s: %d bytes, more than %d", name, len(data), maxChunk)
	}
	t := uint64(created.UnixNano())
	if err := r.w.WriteAttachment(&mcap.Attachment{LogTime: t, CreateTime: t, Name: name, MediaType: media,
		DataSize: uint64(len(data)), Data: bytes.NewReader(data)}); err != nil {
		return fmt.Errorf("recording: attachment %s: %w", name, err)
	}
	return nil
}

// Stats returns the recording's counts so far.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// Close writes the counts (a metadata record), the last chunk and the summary section, and
// closes the file. It returns the counts and the first error of the recording. Close twice is a
// no-op.
func (r *Recorder) Close() (Stats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.st, r.err
	}
	r.closed = true
	err := r.err
	counts := map[string]string{"messages": strconv.FormatUint(r.st.Messages, 10), "dropped": strconv.FormatUint(r.st.Dropped, 10),
		"undecodable": strconv.FormatUint(r.st.Undecodable, 10), "headers": strconv.FormatUint(r.st.Headers, 10), "limit_bytes": strconv.FormatInt(r.limit, 10)}
	if werr := r.w.WriteMetadata(&mcap.Metadata{Name: MetadataName + "/counts", Metadata: counts}); err == nil && werr != nil {
		err = werr
	}
	if cerr := r.w.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if ferr := r.f.Close(); err == nil && ferr != nil {
		err = ferr
	}
	if err != nil {
		err = fmt.Errorf("recording %s: %w", r.f.Name(), err)
	}
	return r.st, err
}
