package john

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// tileRows is the number of rows each BLAS call sees. It is small enough that gonum's
// Dgemm stays serial inside a tile (it goes parallel from 4 blocks of 64), so the only
// parallelism is ours: whole chunks of tiles on the pool's workers, with no allocation.
const tileRows = 128

// maxChunks is the number of row chunks the row range is cut into. The partition depends
// only on n, never on the number of workers, and partial Gram matrices are summed in
// chunk order, so results are bit-identical whatever the worker count.
const maxChunks = 16

// job is one data-parallel pass over row chunks.
type job interface{ runChunk(c int) }

type task struct {
	j job
	c int
}

// pool runs the chunks of a job on workers-1 persistent goroutines plus the caller.
// Passing interface values holding pointers over a channel does not allocate, so a
// pass is allocation-free.
type pool struct {
	workers int
	tasks   chan task
	wg      sync.WaitGroup
	stop    sync.Once
}

func newPool(workers int) *pool {
	if workers < 1 {
		workers = 1
	}
	p := &pool{workers: workers, tasks: make(chan task, maxChunks)}
	for i := 1; i < workers; i++ {
		go func() {
			for t := range p.tasks {
				t.j.runChunk(t.c)
				p.wg.Done()
			}
		}()
	}
	return p
}

// run executes j.runChunk(c) for c in [0, chunks) and returns when all are done.
func (p *pool) run(j job, chunks int) {
	if p.workers <= 1 || chunks <= 1 {
		for c := 0; c < chunks; c++ {
			j.runChunk(c)
		}
		return
	}
	p.wg.Add(chunks)
	for c := 0; c < chunks; c++ {
		p.tasks <- task{j, c}
	}
	// The caller works too, then waits for the stragglers.
	for {
		select {
		case t := <-p.tasks:
			t.j.runChunk(t.c)
			p.wg.Done()
			continue
		default:
		}
		break
	}
	p.wg.Wait()
}

func (p *pool) close() {
	p.stop.Do(func() { close(p.tasks) })
}

// chunking splits [0, n) into at most maxChunks contiguous ranges of whole tiles.
type chunking struct {
	n, chunks, per int
}

func newChunking(n int) chunking {
	tiles := (n + tileRows - 1) / tileRows
	chunks := min(maxChunks, max(tiles, 1))
	per := (tiles + chunks - 1) / chunks * tileRows
	chunks = (n + per - 1) / per
	if n == 0 {
		chunks = 0
	}
	return chunking{n: n, chunks: chunks, per: max(per, tileRows)}
}

func (ch chunking) bounds(c int) (lo, hi int) {
	lo = c * ch.per
	hi = min(lo+ch.per, ch.n)
	return
}

// rowsView is rows [lo, hi) of a as a blas64.General sharing storage.
func rowsView(a blas64.General, lo, hi int) blas64.General {
	return blas64.General{Rows: hi - lo, Cols: a.Cols, Stride: a.Stride, Data: a.Data[lo*a.Stride : (hi-1)*a.Stride+a.Cols]}
}

// gramJob computes Q = sum_i w_i a_i a_i^T (w == nil: all ones) as per-chunk partial sums
// (Definition 3.8: Q = A^T diag(w) A), reduced in chunk order by reduce.
type gramJob struct {
	a       blas64.General
	w       []float64
	ch      chunking
	partial [][]float64 // per chunk, d*d
	scratch [][]float64 // per chunk, tileRows*d
}

func newGramJob(d int) *gramJob {
	g := &gramJob{partial: make([][]float64, maxChunks), scratch: make([][]float64, maxChunks)}
	for c := range g.partial {
		g.partial[c] = make([]float64, d*d)
		g.scratch[c] = make([]float64, tileRows*d)
	}
	return g
}

func (g *gramJob) runChunk(c int) {
	lo, hi := g.ch.bounds(c)
	d := g.a.Cols
	out := blas64.General{Rows: d, Cols: d, Stride: d, Data: g.partial[c]}
	clear(out.Data)
	for t := lo; t < hi; t += tileRows {
		te := min(t+tileRows, hi)
		at := rowsView(g.a, t, te)
		if g.w == nil {
			blas64.Gemm(blas.Trans, blas.NoTrans, 1, at, at, 1, out)
			continue
		}
		wa := blas64.General{Rows: te - t, Cols: d, Stride: d, Data: g.scratch[c][:(te-t)*d]}
		for i := t; i < te; i++ {
			wi := g.w[i]
			src := g.a.Data[i*g.a.Stride : i*g.a.Stride+d]
			dst := wa.Data[(i-t)*d : (i-t)*d+d]
			for k, x := range src {
				dst[k] = wi * x
			}
		}
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, at, wa, 1, out)
	}
}

// gram writes A^T diag(w) A into q (d x d, full storage, symmetrised).
func (g *gramJob) gram(p *pool, a blas64.General, w []float64, q []float64) {
	g.a, g.w, g.ch = a, w, newChunking(a.Rows)
	p.run(g, g.ch.chunks)
	d := a.Cols
	clear(q[:d*d])
	for c := 0; c < g.ch.chunks; c++ {
		for k, x := range g.partial[c][:d*d] {
			q[k] += x
		}
	}
	for i := 0; i < d; i++ {
		for j := i + 1; j < d; j++ {
			m := 0.5 * (q[i*d+j] + q[j*d+i])
			q[i*d+j], q[j*d+i] = m, m
		}
	}
	g.a, g.w = blas64.General{}, nil
}

// levJob computes h_i = a_i^T Q^{-1} a_i = ||a_i^T U^{-1}||^2 for Q = U^T U (Definition 3.8,
// h_i(w)), by a triangular solve per tile. With unitGram set it also accumulates, per
// chunk, sum_i y_i y_i^T / h_i over rows with h_i > 0 (y_i = U^{-T} a_i), which the
// sensitivity bound needs.
type levJob struct {
	a        blas64.General
	u        blas64.Triangular
	h        []float64
	ch       chunking
	unitGram bool
	partial  [][]float64
	scratch  [][]float64
}

func newLevJob(d int) *levJob {
	l := &levJob{partial: make([][]float64, maxChunks), scratch: make([][]float64, maxChunks)}
	for c := range l.partial {
		l.scratch[c] = make([]float64, tileRows*d)
	}
	return l
}

func (l *levJob) runChunk(c int) {
	lo, hi := l.ch.bounds(c)
	d := l.a.Cols
	var out blas64.General
	if l.unitGram {
		out = blas64.General{Rows: d, Cols: d, Stride: d, Data: l.partial[c]}
		clear(out.Data)
	}
	for t := lo; t < hi; t += tileRows {
		te := min(t+tileRows, hi)
		y := blas64.General{Rows: te - t, Cols: d, Stride: d, Data: l.scratch[c][:(te-t)*d]}
		for i := t; i < te; i++ {
			copy(y.Data[(i-t)*d:(i-t)*d+d], l.a.Data[i*l.a.Stride:i*l.a.Stride+d])
		}
		// Y U = A_t, i.e. row i of Y is (U^{-T} a_i)^T.
		blas64.Trsm(blas.Right, blas.NoTrans, 1, l.u, y)
		for i := t; i < te; i++ {
			row := y.Data[(i-t)*d : (i-t)*d+d]
			s := 0.0
			for _, x := range row {
				s += x * x
			}
			l.h[i] = s
			if l.unitGram {
				f := 0.0
				if s > 0 {
					f = 1 / math.Sqrt(s)
				}
				for k := range row {
					row[k] *= f
				}
			}
		}
		if l.unitGram {
			blas64.Gemm(blas.Trans, blas.NoTrans, 1, y, y, 1, out)
		}
	}
}

func (l *levJob) leverages(p *pool, a blas64.General, u blas64.Triangular, h []float64) {
	l.a, l.u, l.h, l.ch = a, u, h, newChunking(a.Rows)
	p.run(l, l.ch.chunks)
	l.a, l.h = blas64.General{}, nil
}

// unitGram runs leverages and also returns M = sum_{h_i>0} y_i y_i^T / h_i into m (d x d).
func (l *levJob) unitGramAndLeverages(p *pool, a blas64.General, u blas64.Triangular, h, m []float64) {
	d := a.Cols
	for c := range l.partial {
		if l.partial[c] == nil {
			l.partial[c] = make([]float64, d*d)
		}
	}
	l.unitGram = true
	l.leverages(p, a, u, h)
	l.unitGram = false
	clear(m[:d*d])
	for c := 0; c < l.ch.chunks; c++ {
		for k, x := range l.partial[c][:d*d] {
			m[k] += x
		}
	}
}

// sketchJob computes hs_i = ||M a_i||^2 / s for the s x d matrix M = S U^{-T}
// (Algorithm 1, line 18 without the factor w_i).
type sketchJob struct {
	a       blas64.General
	m       blas64.General
	out     []float64
	ch      chunking
	scratch [][]float64
}

func newSketchJob(s int) *sketchJob {
	k := &sketchJob{scratch: make([][]float64, maxChunks)}
	for c := range k.scratch {
		k.scratch[c] = make([]float64, tileRows*s)
	}
	return k
}

func (k *sketchJob) runChunk(c int) {
	lo, hi := k.ch.bounds(c)
	s := k.m.Rows
	inv := 1 / float64(s)
	for t := lo; t < hi; t += tileRows {
		te := min(t+tileRows, hi)
		y := blas64.General{Rows: te - t, Cols: s, Stride: s, Data: k.scratch[c][:(te-t)*s]}
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, rowsView(k.a, t, te), k.m, 0, y)
		for i := t; i < te; i++ {
			acc := 0.0
			for _, x := range y.Data[(i-t)*s : (i-t)*s+s] {
				acc += x * x
			}
			k.out[i] = acc * inv
		}
	}
}

func (k *sketchJob) sketch(p *pool, a, m blas64.General, out []float64) {
	k.a, k.m, k.out, k.ch = a, m, out, newChunking(a.Rows)
	p.run(k, k.ch.chunks)
	k.a, k.out = blas64.General{}, nil
}

// cholesky factorises the d x d symmetric matrix q (full storage) in place as U^T U and
// returns U (upper) and log det q. ok is false when q is not positive definite.
func cholesky(q []float64, d int) (u blas64.Triangular, logdet float64, ok bool) {
	t, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: d, Stride: d, Data: q[:d*d]})
	if !ok {
		return t, math.NaN(), false
	}
	for i := 0; i < d; i++ {
		x := t.Data[i*d+i]
		if !(x > 0) || math.IsInf(x, 0) {
			return t, math.NaN(), false
		}
		logdet += 2 * math.Log(x)
	}
	// Zero the strictly lower part so t is a clean triangle (Trsm ignores it anyway).
	for i := 1; i < d; i++ {
		clear(t.Data[i*d : i*d+i])
	}
	return t, logdet, true
}
