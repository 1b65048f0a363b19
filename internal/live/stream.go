package live

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Stream is the episode in progress as its messages are published on the bus (realtime mode:
// the launcher sees every data message, launch.PlayOptions.Data): per step kept (thinned like
// Series), the first value of each publisher's message (the plant's released yhat(t), the
// cloud's u(t), an agent's y_i(t)), for up to MaxComponents publishers. It keeps up with the
// run step by step, where the merged Series come once the episode's records are collected.
type Stream struct {
	Point   int      `json:"point"`
	Episode int      `json:"episode"`
	T       []int    `json:"t"`
	Senders []string `json:"senders"`
	Values  []Floats `json:"values"` // by sender, aligned with T (null: not received)

	stride int
	index  map[int]int // step -> its index in T
}

// Released takes a data message of a realtime run as it was published: its sender, episode,
// step and values, and how late it was after its tick (seconds): the lateness histogram of
// the sender's role and the Stream of the episode in progress.
func (h *Hub) Released(sender string, ep, step int, vals []float64, lateSec float64) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	role, _, _ := strings.Cut(sender, ".")
	l := h.lateness[role]
	if l == nil {
		l = newLatenessHist()
		h.lateness[role] = l
	}
	l.add(lateSec)
	s := h.stream
	if s == nil || s.Point != h.point || ep > s.Episode {
		steps := 0
		if h.point < len(h.info.Points) {
			steps = h.info.Points[h.point].Steps
		}
		s = &Stream{Point: h.point, Episode: ep, stride: max(1, (steps+MaxPoints)/MaxPoints), index: map[int]int{}}
		h.stream = s
	}
	if ep != s.Episode || step < 0 || step%s.stride != 0 || len(vals) == 0 {
		return
	}
	line := -1
	for i, n := range s.Senders {
		if n == sender {
			line = i
		}
	}
	if line < 0 {
		if len(s.Senders) == MaxComponents {
			return
		}
		// in a fixed order whichever message comes first: plant, cloud, then by id
		line = sort.Search(len(s.Senders), func(i int) bool { return senderLess(sender, s.Senders[i]) })
		s.Senders = slices.Insert(s.Senders, line, sender)
		s.Values = slices.Insert(s.Values, line, nanFloats(len(s.T)))
	}
	i, ok := s.index[step]
	if !ok {
		i = len(s.T)
		s.index[step] = i
		s.T = append(s.T, step)
		for k := range s.Values {
			s.Values[k] = append(s.Values[k], math.NaN())
		}
	}
	s.Values[line][i] = vals[0]
	h.seq++
}

// senderLess orders publishers "<role>.<id>": the plant, the cloud, then the others by role and
// numeric id.
func senderLess(a, b string) bool {
	rank := func(s string) (int, string, int) {
		role, id, _ := strings.Cut(s, ".")
		n, _ := strconv.Atoi(id)
		switch role {
		case "plant":
			return 0, role, n
		case "cloud":
			return 1, role, n
		}
		return 2, role, n
	}
	ra, sa, na := rank(a)
	rb, sb, nb := rank(b)
	if ra != rb {
		return ra < rb
	}
	if sa != sb {
		return sa < sb
	}
	return na < nb
}
