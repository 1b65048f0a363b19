package scenario

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dpsim/dpsim/pkg/dynamics"
)

var graphFields = []string{"name", "n", "degree", "rows", "cols", "weight", "seed", "edges"}

// graphParams says which graph fields each named graph (dynamics.GraphNames) uses.
var graphParams = map[string][]string{
	"paper10":        {"n", "weight"},
	"ring":           {"n", "weight"},
	"path":           {"n", "weight"},
	"complete":       {"n", "weight"},
	"grid":           {"rows", "cols", "n", "weight"},
	"random-regular": {"n", "degree", "weight", "seed"},
}

// graph decodes a named graph {name, n, degree, rows, cols, weight, seed} or an edge list
// {n, edges, weight}. It returns nil when unusable.
func (d *decoder) graph(n *yaml.Node) *GraphSpec {
	f := d.mapping(n, "graph", graphFields...)
	if f == nil {
		return nil
	}
	nameN, edgesN := f.get("name"), f.get("edges")
	switch {
	case nameN != nil && edgesN != nil:
		d.add(edgesN, "graph", "give name (a named graph) or edges (an edge list), not both")
		return nil
	case nameN == nil && edgesN == nil:
		d.add(f.node, "graph", "missing name (a named graph: %s) or edges (an edge list [[i, j, w], ...], nodes from 1)", strings.Join(dynamics.GraphNames, ", "))
		return nil
	case nameN != nil:
		return d.namedGraph(f, nameN)
	default:
		return d.edgeList(f, edgesN)
	}
}

// namedGraphTable is the parameters of a named graph (graphParams says which one uses which).
var namedGraphTable = []field[GraphSpec]{
	{key: "n", set: to(intRange(1, MaxNodes, " (nodes)"), func(g *GraphSpec) *int { return &g.N })},
	{key: "degree", set: to(intRange(1, MaxNodes, " (the degree of every node)"), func(g *GraphSpec) *int { return &g.Degree })},
	{key: "rows", set: to(intRange(1, MaxNodes, " (grid rows)"), func(g *GraphSpec) *int { return &g.Rows })},
	{key: "cols", set: to(intRange(1, MaxNodes, " (grid columns)"), func(g *GraphSpec) *int { return &g.Cols })},
	{key: "weight", set: to(positive, func(g *GraphSpec) *float64 { return &g.Weight })},
	{key: "seed", set: to(unsigned, func(g *GraphSpec) *uint64 { return &g.Seed }), absent: func(_ *decoder, g *GraphSpec, _ *fields) bool {
		if g.Name == "random-regular" {
			g.Seed = 1
		}
		return true
	}},
}

func (d *decoder) namedGraph(f *fields, nameN *yaml.Node) *GraphSpec {
	name, ok := d.str(nameN, "graph.name")
	if !ok {
		return nil
	}
	shape, known := graphShapes[name]
	if !known {
		d.add(nameN, "graph.name", "unknown graph %q (allowed: %s; or an edge list {n, edges})", name, strings.Join(dynamics.GraphNames, ", "))
		return nil
	}
	good := d.unusedGraphParams(f, name)
	g := &GraphSpec{Name: name}
	if !walk(d, f, g, namedGraphTable) || !good {
		return nil
	}
	maxDeg, ok := shape(d, f, g)
	if !ok {
		return nil
	}
	edges := 0
	switch name {
	case "complete":
		edges = g.N * (g.N - 1) / 2
	case "random-regular":
		edges = g.N * g.Degree / 2
	}
	if edges > MaxEdges {
		d.add(nameN, "graph", "%s on %d nodes has %d edges, more than the %d allowed", name, g.N, edges, MaxEdges)
		return nil
	}
	if g.Weight == 0 {
		g.Weight = 1 / float64(maxDeg+1)
	}
	return g
}

// unusedGraphParams reports the fields given that graph name does not use.
func (d *decoder) unusedGraphParams(f *fields, name string) bool {
	good := true
	for _, key := range graphFields {
		if key == "name" || !f.has(key) || contains(graphParams[name], key) {
			continue
		}
		users := []string{}
		for _, g := range dynamics.GraphNames {
			if contains(graphParams[g], key) {
				users = append(users, g)
			}
		}
		d.add(f.get(key), f.sub(key), "not used by graph %s (only by %s)", name, strings.Join(users, ", "))
		good = false
	}
	return good
}

// graphShapes checks the size parameters of each named graph, completes g (n of paper10 and
// grid, the paper's weight) and returns its largest degree (for the default weight).
var graphShapes = map[string]func(d *decoder, f *fields, g *GraphSpec) (maxDeg int, ok bool){
	"paper10": func(d *decoder, f *fields, g *GraphSpec) (int, bool) {
		if nn := f.get("n"); nn != nil && g.N != 10 {
			d.add(nn, "graph.n", "%d, but paper10 has 10 nodes (leave n out)", g.N)
			return 0, false
		}
		g.N = 10
		if !f.has("weight") {
			g.Weight = 0.25 // the paper's weight (Section 6.3)
		}
		return 4, true
	},
	"ring": func(d *decoder, f *fields, g *GraphSpec) (int, bool) {
		return 2, d.requireNodes(f, g, 3, "a ring needs at least 3 nodes")
	},
	"path": func(d *decoder, f *fields, g *GraphSpec) (int, bool) {
		ok := d.requireNodes(f, g, 2, "a path needs at least 2 nodes")
		return min(2, g.N-1), ok
	},
	"complete": func(d *decoder, f *fields, g *GraphSpec) (int, bool) {
		ok := d.requireNodes(f, g, 2, "a complete graph needs at least 2 nodes")
		return g.N - 1, ok
	},
	"grid":           gridShape,
	"random-regular": randomRegularShape,
}

// requireNodes requires graph.n >= lo (why explains lo).
func (d *decoder) requireNodes(f *fields, g *GraphSpec, lo int, why string) bool {
	nn := f.get("n")
	if nn == nil {
		d.missing(f, "n", fmt.Sprintf("graph %s needs n, the number of nodes (>= %d)", g.Name, lo))
		return false
	}
	if g.N < lo {
		d.add(nn, "graph.n", "%d is too small for graph %s: %s", g.N, g.Name, why)
		return false
	}
	return true
}

func gridShape(d *decoder, f *fields, g *GraphSpec) (int, bool) {
	rn, cn := f.get("rows"), f.get("cols")
	if rn == nil || cn == nil {
		if rn == nil {
			d.missing(f, "rows", "graph grid needs rows and cols")
		}
		if cn == nil {
			d.missing(f, "cols", "graph grid needs rows and cols")
		}
		return 0, false
	}
	if g.Rows*g.Cols < 2 || g.Rows*g.Cols > MaxNodes {
		d.add(rn, "graph", "grid %dx%d has %d nodes, want 2..%d", g.Rows, g.Cols, g.Rows*g.Cols, MaxNodes)
		return 0, false
	}
	if nn := f.get("n"); nn != nil && g.N != g.Rows*g.Cols {
		d.add(nn, "graph.n", "%d, but a %dx%d grid has %d nodes (leave n out)", g.N, g.Rows, g.Cols, g.Rows*g.Cols)
		return 0, false
	}
	g.N = g.Rows * g.Cols
	return min(2, g.Rows-1) + min(2, g.Cols-1), true
}

func randomRegularShape(d *decoder, f *fields, g *GraphSpec) (int, bool) {
	if !d.requireNodes(f, g, 3, "a random regular graph needs at least 3 nodes") {
		return 0, false
	}
	dn := f.get("degree")
	if dn == nil {
		d.missing(f, "degree", "graph random-regular needs degree, the degree of every node (2..n-1)")
		return 0, false
	}
	if g.Degree < 2 || g.Degree >= g.N {
		d.add(dn, "graph.degree", "%d must be in 2..%d (n - 1) for a connected regular graph on %d nodes", g.Degree, g.N-1, g.N)
		return 0, false
	}
	if g.N*g.Degree%2 != 0 {
		d.add(dn, "graph.degree", "%d with n = %d: n * degree must be even for a regular graph", g.Degree, g.N)
		return 0, false
	}
	return g.Degree, true
}

// edgeListTable is the header of an edge list: its size and default weight.
var edgeListTable = []field[GraphSpec]{
	{key: "n", need: "an edge list needs n, the number of nodes (edges count nodes from 1 to n)",
		set: to(intRange(2, MaxNodes, " (nodes)"), func(g *GraphSpec) *int { return &g.N })},
	{key: "weight", set: to(positive, func(g *GraphSpec) *float64 { return &g.Weight })},
}

// edgeList decodes {n, edges, weight}: the edges [i, j] or [i, j, w] (nodes from 1), each
// undirected edge once, no self-loop, a connected graph. An edge without w has the default
// weight: graph.weight, else 1/(max degree + 1) so that sum_j w_ij < 1 (Section 6).
func (d *decoder) edgeList(f *fields, edgesN *yaml.Node) *GraphSpec {
	g := &GraphSpec{}
	if !f.has("n") {
		d.missing(f, "n", edgeListTable[0].need)
		return nil
	}
	if !walk(d, f, g, edgeListTable) {
		return nil
	}
	if edgesN.Kind != yaml.SequenceNode || len(edgesN.Content) == 0 {
		if edgesN.Kind == yaml.SequenceNode {
			d.add(edgesN, "graph.edges", "empty: want at least one edge [i, j] or [i, j, w]")
		} else {
			d.add(edgesN, "graph.edges", "want a list of edges [i, j] or [i, j, w], got %s", describe(edgesN))
		}
		return nil
	}
	explicit, ok := d.edges(edgesN, g)
	if !ok {
		return nil
	}
	if g.Weight == 0 {
		g.Weight = 1 / float64(maxDegree(g)+1)
	}
	for k := range g.Edges {
		if !explicit[k] {
			g.Edges[k].W = g.Weight
		}
	}
	if v := unreachable(g); v >= 0 {
		d.add(edgesN, "graph.edges", "the graph is not connected: node %d cannot be reached from node 1 (consensus needs a connected graph)", v+1)
		return nil
	}
	return g
}

// edges decodes the edge list into g.Edges; explicit[k] says whether edge k gave its weight.
func (d *decoder) edges(edgesN *yaml.Node, g *GraphSpec) (explicit []bool, good bool) {
	type pair struct{ i, j int }
	seen := map[pair]int{}
	explicit = make([]bool, 0, len(edgesN.Content))
	good = true
	for k, en := range edgesN.Content {
		en = resolve(en)
		p := index("graph.edges", k)
		e, hasW, ok := d.edge(en, p, g.N)
		if !ok {
			good = false
			continue
		}
		if e.I == e.J {
			d.add(en, p, "self-loop on node %d: an edge joins two different nodes", e.I+1)
			good = false
			continue
		}
		key := pair{min(e.I, e.J), max(e.I, e.J)}
		if first, dup := seen[key]; dup {
			d.add(en, p, "edge %d-%d repeats graph.edges[%d] (edges are undirected: list each once)", key.i+1, key.j+1, first)
			good = false
			continue
		}
		seen[key] = k
		g.Edges = append(g.Edges, e)
		explicit = append(explicit, hasW)
	}
	return explicit, good
}

// edge decodes one edge [i, j] or [i, j, w] of a graph of nodes nodes (0-based in the result).
func (d *decoder) edge(en *yaml.Node, p string, nodes int) (e Edge, hasW, ok bool) {
	if en.Kind != yaml.SequenceNode || (len(en.Content) != 2 && len(en.Content) != 3) {
		d.add(en, p, "want an edge [i, j] or [i, j, w] (nodes from 1 to %d), got %s", nodes, describeEdge(en))
		return e, false, false
	}
	var ij [2]int
	ok = true
	for t := range 2 {
		c := resolve(en.Content[t])
		v, isInt := d.integer(c, index(p, t))
		if !isInt {
			ok = false
			continue
		}
		if v < 1 || v > int64(nodes) {
			d.add(c, index(p, t), "node %s out of range 1..%d (nodes count from 1)", c.Value, nodes)
			ok = false
			continue
		}
		ij[t] = int(v) - 1
	}
	e.I, e.J = ij[0], ij[1]
	hasW = len(en.Content) == 3
	if hasW {
		c := resolve(en.Content[2])
		v, isNum := d.float(c, index(p, 2))
		switch {
		case !isNum:
			ok = false
		case v <= 0:
			d.add(c, index(p, 2), "weight %s must be > 0", c.Value)
			ok = false
		default:
			e.W = v
		}
	}
	return e, hasW, ok
}

// maxDegree is the largest number of edges at one node.
func maxDegree(g *GraphSpec) int {
	deg := make([]int, g.N)
	top := 0
	for _, e := range g.Edges {
		deg[e.I]++
		deg[e.J]++
		top = max(top, deg[e.I], deg[e.J])
	}
	return top
}

// unreachable returns the first node that cannot be reached from node 0, or -1 when the
// graph is connected.
func unreachable(g *GraphSpec) int {
	adj := make([][]int, g.N)
	for _, e := range g.Edges {
		adj[e.I] = append(adj[e.I], e.J)
		adj[e.J] = append(adj[e.J], e.I)
	}
	seen := make([]bool, g.N)
	stack := []int{0}
	seen[0] = true
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, u := range adj[v] {
			if !seen[u] {
				seen[u] = true
				stack = append(stack, u)
			}
		}
	}
	for v, ok := range seen {
		if !ok {
			return v
		}
	}
	return -1
}

func describeEdge(n *yaml.Node) string {
	if n.Kind == yaml.SequenceNode {
		return fmt.Sprintf("a list of %d entries", len(n.Content))
	}
	return describe(n)
}
