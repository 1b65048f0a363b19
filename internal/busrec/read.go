package busrec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/foxglove/mcap/go/mcap"
)

// maxChunk bounds what reading a recording decompresses or reads at once: a chunk or a record
// beyond it is refused (a recording writes chunks of about Options.ChunkSize).
const maxChunk = 64 << 20

// Message is one recorded message.
type Message struct {
	Topic       string // the subject
	Schema      string // the channel's schema name (dpsim/data-yhat, ...)
	LogTime     uint64 // received, Unix ns
	PublishTime uint64 // sent, Unix ns
	Data        []byte // JSON (valid until fn returns)
	Sequence    uint32 // its number on its channel, from 1
	// Header are the NATS headers it came with (its HeaderRecord; nil: none).
	Header *HeaderRecord
}

// Channel is one channel of a recording.
type Channel struct {
	Topic, Schema, Encoding string
	Messages                uint64
	// headersOf is the subject of a companion channel of headers ("": a subject's channel).
	headersOf string
}

// Contents are what Scan found in a recording.
type Contents struct {
	Channels map[string]*Channel // by topic: the subjects (not their companion channels of headers)
	Metadata map[string]map[string]string
	// Attachments are the recording's attachments by name (ScenarioAttachment).
	Attachments map[string]Attachment
	Messages    uint64 // on the subjects' channels
	// Headers counts the HeaderRecords read (the messages that came with NATS headers).
	Headers uint64
	// Complete: the footer and closing magic were read (a closed recording); else Truncated
	// says where reading stopped (a recording killed before Close: its complete chunks read).
	Complete  bool
	Truncated string
}

// Scan reads the recording at path with the MCAP lexer, record by record, and hands fn every
// message (nil: only count). It reads a closed recording to its end and an unterminated one
// (killed before Close wrote its summary) up to its last complete chunk, which Contents.Truncated
// names; it fails only on what is no MCAP file, or when fn fails.
func Scan(path string, fn func(Message) error) (*Contents, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	defer f.Close()
	c := &Contents{Channels: map[string]*Channel{}, Metadata: map[string]map[string]string{}, Attachments: map[string]Attachment{}}
	lex, err := mcap.NewLexer(f, &mcap.LexerOptions{ValidateChunkCRCs: true, MaxDecompressedChunkSize: maxChunk, MaxRecordSize: maxChunk,
		AttachmentCallback: c.attachment})
	if err != nil {
		return nil, fmt.Errorf("recording %s: not an MCAP file: %w", path, err)
	}
	defer lex.Close()
	st := &scanState{byID: map[uint16]*Channel{}, schemas: map[uint16]string{}, pending: map[string]*HeaderRecord{}}
	var buf []byte
	for {
		tok, data, err := lex.Next(buf)
		if err != nil {
			if errors.Is(err, io.EOF) && c.Complete {
				return c, nil
			}
			c.Truncated = fmt.Sprintf("stopped after %d messages: %v (the rest of the file was not written)", c.Messages, err)
			return c, nil
		}
		if len(data) > len(buf) {
			buf = data
		}
		if err := c.token(tok, data, st, fn); err != nil {
			return c, fmt.Errorf("recording %s: %w", path, err)
		}
	}
}

// scanState is what Scan keeps across records: the channels and schemas by id, and the
// headers read for each subject's next message.
type scanState struct {
	byID    map[uint16]*Channel
	schemas map[uint16]string
	pending map[string]*HeaderRecord
}

// attachment reads an attachment (at most maxChunk bytes) into c.Attachments.
func (c *Contents) attachment(a *mcap.AttachmentReader) error {
	if a.DataSize > maxChunk {
		return fmt.Errorf("attachment %s: %d bytes, more than %d", a.Name, a.DataSize, maxChunk)
	}
	data, err := io.ReadAll(a.Data())
	if err != nil {
		return fmt.Errorf("attachment %s: %w", a.Name, err)
	}
	c.Attachments[a.Name] = Attachment{MediaType: a.MediaType, Data: data}
	return nil
}

// Attachment is one attachment of a recording.
type Attachment struct {
	MediaType string
	Data      []byte
}

// token takes one record of the lexer into c.
func (c *Contents) token(tok mcap.TokenType, data []byte, st *scanState, fn func(Message) error) error {
	switch tok {
	case mcap.TokenSchema:
		s, err := mcap.ParseSchema(data)
		if err != nil {
			return err
		}
		st.schemas[s.ID] = s.Name
	case mcap.TokenChannel:
		ch, err := mcap.ParseChannel(data)
		if err != nil {
			return err
		}
		if st.byID[ch.ID] == nil {
			cc := &Channel{Topic: ch.Topic, Schema: st.schemas[ch.SchemaID], Encoding: ch.MessageEncoding}
			st.byID[ch.ID] = cc
			if subject, ok := IsHeaders(ch.Topic); ok {
				cc.headersOf = subject
			} else {
				c.Channels[ch.Topic] = cc
			}
		}
	case mcap.TokenMessage:
		m, err := mcap.ParseMessage(data)
		if err != nil {
			return err
		}
		return c.message(m, st, fn)
	case mcap.TokenMetadata:
		md, err := mcap.ParseMetadata(data)
		if err != nil {
			return err
		}
		c.Metadata[md.Name] = md.Metadata
	case mcap.TokenFooter:
		c.Complete = true
	}
	return nil
}

// message takes one message: a HeaderRecord is kept for its subject's next message, any other
// is counted and handed to fn with its headers (those whose Seq is its sequence number).
func (c *Contents) message(m *mcap.Message, st *scanState, fn func(Message) error) error {
	ch := st.byID[m.ChannelID]
	if ch == nil {
		return fmt.Errorf("message on channel %d, which no channel record defined", m.ChannelID)
	}
	ch.Messages++
	if ch.headersOf != "" {
		h := &HeaderRecord{}
		if err := json.Unmarshal(m.Data, h); err != nil {
			return fmt.Errorf("%s: message %d: %w", ch.Topic, m.Sequence, err)
		}
		st.pending[ch.headersOf] = h
		c.Headers++
		return nil
	}
	c.Messages++
	h := st.pending[ch.Topic]
	if h != nil && h.Seq <= m.Sequence {
		delete(st.pending, ch.Topic)
		if h.Seq < m.Sequence {
			h = nil // the headers of a message that is not in the file
		}
	} else {
		h = nil
	}
	if fn != nil {
		return fn(Message{Topic: ch.Topic, Schema: ch.Schema, LogTime: m.LogTime, PublishTime: m.PublishTime, Data: m.Data, Sequence: m.Sequence, Header: h})
	}
	return nil
}
