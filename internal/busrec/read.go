package busrec

import (
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
}

// Channel is one channel of a recording.
type Channel struct {
	Topic, Schema, Encoding string
	Messages                uint64
}

// Contents are what Scan found in a recording.
type Contents struct {
	Channels map[string]*Channel // by topic
	Metadata map[string]map[string]string
	Messages uint64
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
	lex, err := mcap.NewLexer(f, &mcap.LexerOptions{ValidateChunkCRCs: true, MaxDecompressedChunkSize: maxChunk, MaxRecordSize: maxChunk})
	if err != nil {
		return nil, fmt.Errorf("recording %s: not an MCAP file: %w", path, err)
	}
	defer lex.Close()
	c := &Contents{Channels: map[string]*Channel{}, Metadata: map[string]map[string]string{}}
	byID := map[uint16]*Channel{}
	schemas := map[uint16]string{}
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
		if err := c.token(tok, data, byID, schemas, fn); err != nil {
			return c, fmt.Errorf("recording %s: %w", path, err)
		}
	}
}

// token takes one record of the lexer into c.
func (c *Contents) token(tok mcap.TokenType, data []byte, byID map[uint16]*Channel, schemas map[uint16]string, fn func(Message) error) error {
	switch tok {
	case mcap.TokenSchema:
		s, err := mcap.ParseSchema(data)
		if err != nil {
			return err
		}
		schemas[s.ID] = s.Name
	case mcap.TokenChannel:
		ch, err := mcap.ParseChannel(data)
		if err != nil {
			return err
		}
		if byID[ch.ID] == nil {
			cc := &Channel{Topic: ch.Topic, Schema: schemas[ch.SchemaID], Encoding: ch.MessageEncoding}
			byID[ch.ID], c.Channels[ch.Topic] = cc, cc
		}
	case mcap.TokenMessage:
		m, err := mcap.ParseMessage(data)
		if err != nil {
			return err
		}
		ch := byID[m.ChannelID]
		if ch == nil {
			return fmt.Errorf("message on channel %d, which no channel record defined", m.ChannelID)
		}
		ch.Messages++
		c.Messages++
		if fn != nil {
			return fn(Message{Topic: ch.Topic, Schema: ch.Schema, LogTime: m.LogTime, PublishTime: m.PublishTime, Data: m.Data})
		}
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
