package bus

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A journal's records survive a restart of the server on the same store, the last record of a
// key replaces the one before, and a user without the JetStream API cannot write it.
func TestJournalSurvivesRestart(t *testing.T) {
	store := t.TempDir()
	u, err := NewUser("writer", []string{JournalAPI, "j.>"}, []string{"_INBOX.>"})
	require.NoError(t, err)
	other, err := NewUser("other", []string{"x.>"}, []string{"_INBOX.>"})
	require.NoError(t, err)
	opts := JournalOptions{Stream: "J", Subjects: "j.>", MaxMsgs: 10, MaxBytes: 1 << 20, MaxMsgSize: 1 << 10}
	open := func() (*Embedded, *Journal) {
		srv, err := StartEmbedded(EmbeddedOptions{JetStream: true, StoreDir: store, Users: []User{u, other}})
		require.NoError(t, err)
		c, err := Connect(srv.URL(), "writer", WithUser(u.Name, u.Password))
		require.NoError(t, err)
		t.Cleanup(c.Close)
		j, err := c.Journal(context.Background(), opts)
		require.NoError(t, err)
		return srv, j
	}
	ctx := context.Background()
	srv, j := open()
	require.NoError(t, j.Append(ctx, "j.1.0", []byte("a")))
	require.NoError(t, j.Append(ctx, "j.1.0", []byte("b")))
	require.NoError(t, j.Append(ctx, "j.1.1", []byte("c")))
	c, err := Connect(srv.URL(), "other", WithUser(other.Name, other.Password))
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, err = c.Journal(short, opts)
	require.Error(t, err, "a user without the JetStream API opened the journal")
	c.Close()
	srv.Shutdown()

	srv, j = open()
	defer srv.Shutdown()
	data, ok, err := j.Last(ctx, "j.1.0")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "b", string(data))
	_, ok, err = j.Last(ctx, "j.2.0")
	require.NoError(t, err)
	require.False(t, ok)
	n, err := j.Records(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
}
