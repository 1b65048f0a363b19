package bus

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A request reaches one member of a queue group and its answer comes back; a plain subscriber
// hears every request; nobody subscribed is ErrNoResponders at once; a late Respond still answers.
func TestServeAndRequest(t *testing.T) {
	srv := startServer(t)
	client := connect(t, srv.URL(), "client")
	var heard [3]atomic.Int64
	for i := range 2 {
		c := connect(t, srv.URL(), "member")
		_, err := c.Serve("svc.queue", "group", func(r *Request) {
			heard[i].Add(1)
			require.NoError(t, r.Respond(append([]byte("from member: "), r.Data...)))
		})
		require.NoError(t, err)
		require.NoError(t, c.Flush(time.Second))
	}
	later := make(chan *Request, 1)
	svc := connect(t, srv.URL(), "held")
	_, err := svc.Serve("svc.held", "", func(r *Request) { later <- r })
	require.NoError(t, err)
	require.NoError(t, svc.Flush(time.Second))

	const n = 40
	for i := range n {
		resp, err := client.Request(context.Background(), "svc.queue", []byte{byte('a' + i%26)}, 2*time.Second)
		require.NoError(t, err)
		require.Equal(t, "from member: "+string(rune('a'+i%26)), string(resp))
	}
	require.EqualValues(t, n, heard[0].Load()+heard[1].Load(), "each request reaches one member")

	var wg sync.WaitGroup
	wg.Go(func() {
		r := <-later
		time.Sleep(50 * time.Millisecond) // answered later, from another goroutine
		require.NoError(t, r.Respond([]byte("late")))
	})
	resp, err := client.Request(context.Background(), "svc.held", []byte("x"), 2*time.Second)
	require.NoError(t, err)
	require.Equal(t, "late", string(resp))
	wg.Wait()

	_, err = client.Request(context.Background(), "svc.nobody", nil, time.Minute)
	require.True(t, errors.Is(err, ErrNoResponders), "%v (not a timeout: nobody listens is known at once)", err)
	require.Greater(t, client.MaxPayload(), int64(0))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = client.Request(ctx, "svc.held", nil, time.Second)
	require.Error(t, err)
}
