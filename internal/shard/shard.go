package shard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/dpsim/dpsim/internal/cli"
)

// Max bounds N in --shard I/N.
const Max = 10_000

// Format names the format of a part's manifest (ManifestFile).
const Format = "dpsim-shard/1"

// ManifestFile is a part's manifest in its directory, written last: a part without it is
// incomplete.
const ManifestFile = "shard.json"

// MaxManifest bounds a manifest's size: the scenario file it carries (at most 16 MiB, base64)
// and a line per point.
const MaxManifest = 24 << 20

// The kinds of parts (Header.Kind).
const (
	KindAudit = "audit"
	KindRun   = "run"
)

// Shard is --shard I/N: slice I (0-based) of N.
type Shard struct {
	I int `json:"index"`
	N int `json:"count"`
}

// Enabled reports whether --shard was given.
func (s Shard) Enabled() bool { return s.N > 0 }

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// Parse parses --shard I/N: 0 <= I < N <= Max.
func Parse(v string) (Shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(v), "/")
	i, ierr := strconv.Atoi(is)
	n, nerr := strconv.Atoi(ns)
	if !ok || ierr != nil || nerr != nil {
		return Shard{}, cli.UsageError("--shard %q: want I/N, e.g. 0/7 (slice I of N, I = 0..N-1)", v)
	}
	if n < 1 || n > Max || i < 0 || i >= n {
		return Shard{}, cli.UsageError("--shard %q: want 0 <= I < N <= %d", v, Max)
	}
	return Shard{I: i, N: n}, nil
}

// Range is the shard's items of total: lo..hi-1, the I-th of N contiguous slices whose sizes
// differ by at most one.
func (s Shard) Range(total int) (lo, hi int) {
	return int(int64(s.I) * int64(total) / int64(s.N)), int(int64(s.I+1) * int64(total) / int64(s.N))
}

// Mine reports whether chunk i is the shard's when the chunks are dealt round-robin.
func (s Shard) Mine(i int) bool { return i%s.N == s.I }

// Header is what every part's manifest starts with: what the merge checks before anything else.
type Header struct {
	Format string `json:"format"`
	Kind   string `json:"kind"`
	// Scenario is the scenario's name, Source its path as given, Digest the SHA-256 of its
	// bytes (hex).
	Scenario string `json:"scenario"`
	Source   string `json:"source"`
	Digest   string `json:"scenario_sha256"`
	Seed     uint64 `json:"seed"`
	// Build is the dpsim binary that played the part (BuildID): parts of different builds may
	// have played different arithmetic, and are not merged.
	Build string `json:"build"`
	Shard Shard  `json:"shard"`
}

// NewHeader is the header of shard s of kind over the scenario file's bytes.
func NewHeader(kind, name, source string, yaml []byte, seed uint64, s Shard) Header {
	sum := sha256.Sum256(yaml)
	return Header{Format: Format, Kind: kind, Scenario: name, Source: source, Digest: hex.EncodeToString(sum[:]), Seed: seed, Build: BuildID(), Shard: s}
}

// BuildID names this binary's build: its Go version, module version and, when built from a
// git checkout, the commit (and "+modified" for uncommitted changes).
func BuildID() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	id := bi.GoVersion + " " + bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev != "" {
		id += " " + rev + modified
	}
	return id
}

// ReadManifest reads DIR/shard.json, checks its header - the format, the kind, I and N - and
// decodes it into m (the kind's manifest, which embeds Header; unknown fields refused).
func ReadManifest(dir, kind string, m any) error {
	path := filepath.Join(dir, ManifestFile)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("part %s: %w (not the --out of a --shard I/N, or the shard did not finish)", dir, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxManifest+1))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxManifest {
		return fmt.Errorf("%s: larger than %d bytes, not a part's manifest", path, MaxManifest)
	}
	var h Header // first the header alone: a part of another kind has other fields
	if err := json.Unmarshal(data, &h); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case h.Format != Format:
		return fmt.Errorf("%s: format %q, want %q", path, h.Format, Format)
	case h.Kind != kind:
		return fmt.Errorf("%s: a part of dpsim %s, not of dpsim %s", path, h.Kind, kind)
	case h.Shard.N < 1 || h.Shard.N > Max || h.Shard.I < 0 || h.Shard.I >= h.Shard.N:
		return fmt.Errorf("%s: shard %s out of range", path, h.Shard)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// PeekKind returns the kind of the part in dir ("" and an error when it has no readable manifest).
func PeekKind(dir string) (string, error) {
	var h struct {
		Kind string `json:"kind"`
	}
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return "", fmt.Errorf("part %s: %w (not the --out of a --shard I/N, or the shard did not finish)", dir, err)
	}
	if err := json.Unmarshal(data, &h); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return h.Kind, nil
}

// Part is a part as read: its directory and header.
type Part struct {
	Dir string
	Header
}

// Check checks that parts are the N shards of one job: the same kind, scenario (digest), seed,
// build and N (then same(first, p) for the kind's own settings), every index 0..N-1 exactly once.
// An error names the part and the field that does not fit, a missing or duplicated shard its
// index. It returns, for every index, the position of its part in parts.
func Check(parts []Part, same func(first, p int) (field string, want, got any)) ([]int, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("no parts given")
	}
	first := parts[0]
	for i, p := range parts[1:] {
		field, want, got := "", any(nil), any(nil)
		switch {
		case p.Kind != first.Kind:
			field, want, got = "kind", first.Kind, p.Kind
		case p.Digest != first.Digest:
			field, want, got = "scenario_sha256 (the scenario file differs)", first.Digest, p.Digest
		case p.Seed != first.Seed:
			field, want, got = "seed", first.Seed, p.Seed
		case p.Build != first.Build:
			field, want, got = "build (another dpsim binary)", first.Build, p.Build
		case p.Shard.N != first.Shard.N:
			field, want, got = "shard count N", first.Shard.N, p.Shard.N
		default:
			field, want, got = same(0, i+1)
		}
		if field != "" {
			return nil, fmt.Errorf("part %s (shard %s) is not of the same %s as part %s (shard %s): %s %v, not %v",
				p.Dir, p.Shard, first.Kind, first.Dir, first.Shard, field, got, want)
		}
	}
	n := first.Shard.N
	byIndex := make([]int, n)
	for i := range byIndex {
		byIndex[i] = -1
	}
	for i, p := range parts {
		if q := byIndex[p.Shard.I]; q >= 0 {
			return nil, fmt.Errorf("shard %s given twice: parts %s and %s", p.Shard, parts[q].Dir, p.Dir)
		}
		byIndex[p.Shard.I] = i
	}
	var missing []string
	for i, q := range byIndex {
		if q < 0 {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%d of %d shards missing: %s (run every --shard I/N and give all their parts)", len(missing), n, strings.Join(missing, ", "))
	}
	return byIndex, nil
}
