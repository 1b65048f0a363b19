package bus

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/dpsim/dpsim/pkg/endpoint"
	"github.com/dpsim/dpsim/pkg/wire"
)

// rawStepsPerSec is the rate of the last raw request-reply run, for the ratio.
var rawStepsPerSec float64

// BenchmarkLockstepVsRequestReply compares, over the same embedded server, a raw NATS
// request-reply loop (nc.Request against a responder on another connection: one round
// trip per step) with a lockstep plant <-> cloud exchange using this package: per step
// the plant publishes a 1-value yhat, the cloud collects and validates it and publishes a
// 1-value u, the plant collects and validates u (two processes' worth of connections).
//
//   - raw-request-reply, lockstep-json, lockstep-binary: separate runs, steps/s each;
//     ratio-vs-raw divides by the preceding raw run.
//   - paired-json, paired-binary: raw and lockstep steps interleaved in blocks of 100 in
//     one run, so both see the same machine load (the robust ratio on a shared machine);
//     ns/op is one raw plus one lockstep step.
//
// Target: ratio >= 0.5.
//
//	go test ./pkg/bus/ -run '^$' -bench LockstepVsRequestReply -benchtime 5000x
func BenchmarkLockstepVsRequestReply(b *testing.B) {
	srv := startServer(b)
	b.Run("raw-request-reply", func(b *testing.B) {
		raw := newRawLoop(b, srv.URL())
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			raw.step()
		}
		rate := float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(rate, "steps/s")
		rawStepsPerSec = rate
	})
	for _, enc := range []wire.Encoding{wire.JSON, wire.Binary} {
		b.Run("lockstep-"+enc.String(), func(b *testing.B) {
			ls := newLockstepLoop(b, srv.URL(), enc, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ls.step(i)
			}
			b.StopTimer()
			ls.finish()
			rate := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "steps/s")
			if rawStepsPerSec > 0 {
				b.ReportMetric(rate/rawStepsPerSec, "ratio-vs-raw")
			}
		})
	}
	for _, enc := range []wire.Encoding{wire.JSON, wire.Binary} {
		b.Run("paired-"+enc.String(), func(b *testing.B) {
			raw := newRawLoop(b, srv.URL())
			ls := newLockstepLoop(b, srv.URL(), enc, b.N)
			const block = 100
			var tRaw, tLock time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i += block {
				end := min(i+block, b.N)
				t0 := time.Now()
				for j := i; j < end; j++ {
					raw.step()
				}
				t1 := time.Now()
				for j := i; j < end; j++ {
					ls.step(j)
				}
				tRaw += t1.Sub(t0)
				tLock += time.Since(t1)
			}
			b.StopTimer()
			ls.finish()
			rawRate := float64(b.N) / tRaw.Seconds()
			lockRate := float64(b.N) / tLock.Seconds()
			b.ReportMetric(rawRate, "raw-steps/s")
			b.ReportMetric(lockRate, "lockstep-steps/s")
			b.ReportMetric(lockRate/rawRate, "ratio")
		})
	}
}

type rawLoop struct {
	b       testing.TB
	req     *nats.Conn
	payload []byte
}

func newRawLoop(b testing.TB, url string) *rawLoop {
	req, err := nats.Connect(url, nats.Name("bench-requester"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(req.Close)
	rsp, err := nats.Connect(url, nats.Name("bench-responder"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rsp.Close)
	if _, err := rsp.Subscribe("bench.rr", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		b.Fatal(err)
	}
	if err := rsp.Flush(); err != nil {
		b.Fatal(err)
	}
	return &rawLoop{b: b, req: req, payload: make([]byte, 8)}
}

func (r *rawLoop) step() {
	if _, err := r.req.Request("bench.rr", r.payload, 5*time.Second); err != nil {
		r.b.Fatal(err)
	}
}

// lockstepLoop is a plant (driven by step) and a cloud goroutine answering n steps.
type lockstepLoop struct {
	b        testing.TB
	n        int
	uIn      *Receiver
	pub      *Publisher
	y        []float64
	cloudErr chan error
}

const benchSteps = 1000 // steps per episode; n steps run as consecutive episodes

func newLockstepLoop(b testing.TB, url string, enc wire.Encoding, n int) *lockstepLoop {
	subj, _ := wire.NewSubjects(fmt.Sprintf("bench-%s-%d", enc, n))
	plant := connect(b, url, "bench-plant", WithEncoding(enc))
	cloud := connect(b, url, "bench-cloud", WithEncoding(enc))
	exp := wire.Expect{Run: subj.Run(), Dim: 1, Steps: benchSteps, Episode: wire.AnyEpisode}
	yIn, err := cloud.Receive(subj.PlantYhat(0), ReceiverOptions{Expect: exp, MatchSubject: true})
	if err != nil {
		b.Fatal(err)
	}
	uIn, err := plant.Receive(subj.CloudU(0), ReceiverOptions{Expect: exp, MatchSubject: true})
	if err != nil {
		b.Fatal(err)
	}
	if err := cloud.Flush(time.Second); err != nil {
		b.Fatal(err)
	}
	if err := plant.Flush(time.Second); err != nil {
		b.Fatal(err)
	}
	l := &lockstepLoop{b: b, n: n, uIn: uIn, y: []float64{1}, cloudErr: make(chan error, 1)}
	go func() {
		pub := cloud.Publisher(subj.CloudU(0), subj.Run(), "cloud.0", endpoint.StreamU)
		u := make([]float64, 1)
		for i := 0; i < n; i++ {
			ep, k := i/benchSteps, i%benchSteps
			m, err := await(yIn, ep, k)
			if err != nil {
				l.cloudErr <- err
				return
			}
			u[0] = -0.5 * m.Values[0]
			if err := pub.Send(ep, k, u); err != nil {
				l.cloudErr <- err
				return
			}
		}
		l.cloudErr <- nil
	}()
	l.pub = plant.Publisher(subj.PlantYhat(0), subj.Run(), "plant.0", endpoint.StreamYhat)
	return l
}

func (l *lockstepLoop) step(i int) {
	ep, k := i/benchSteps, i%benchSteps
	if err := l.pub.Send(ep, k, l.y); err != nil {
		l.b.Fatal(err)
	}
	m, err := await(l.uIn, ep, k)
	if err != nil {
		l.b.Fatal(err)
	}
	l.y[0] = 1 + m.Values[0]
}

// await reads the next valid message of a one-sender lockstep exchange and checks it is the
// one of episode ep, step k (the messages of one sender arrive in order).
func await(in *Receiver, ep, k int) (*wire.Message, error) {
	m, err := in.Next(time.Now().Add(5 * time.Second))
	if err != nil {
		return nil, fmt.Errorf("episode %d step %d: %w", ep, k, err)
	}
	if m.Episode != ep || m.Step != k {
		return nil, fmt.Errorf("got episode %d step %d, want %d %d", m.Episode, m.Step, ep, k)
	}
	return m, nil
}

func (l *lockstepLoop) finish() {
	if err := <-l.cloudErr; err != nil {
		l.b.Fatal(err)
	}
	if s := l.uIn.Counters().Snapshot(); s.Dropped != 0 || s.Received != uint64(l.n) {
		l.b.Fatalf("plant counters %+v", s)
	}
}
