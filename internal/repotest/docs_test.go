package repotest

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// maxReadmeLines bounds README.md: a front door (what dpsim is, the set-up, a tour, the
// commands, the guarantees in brief, links); the rest is the manual in docs/.
const maxReadmeLines = 260

func TestReadmeLength(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n > maxReadmeLines {
		t.Errorf("README.md has %d lines (at most %d): move the detail into a page of docs/ and link it", n, maxReadmeLines)
	}
}

// mdLink matches an inline Markdown link or image, [text](target) or ![alt](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// mdProse returns the lines of a Markdown file outside its fenced code blocks, numbered from 1
// (a line of a code block is "").
func mdProse(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fence := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			out = append(out, "")
			continue
		}
		if fence {
			line = ""
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// relLinks returns the relative link targets of a Markdown file (not URLs, not mail, not
// anchors within the page), with the line each is on.
func relLinks(t *testing.T, path string) (targets []string, lines []int) {
	for i, line := range mdProse(t, path) {
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if u, err := url.Parse(target); err == nil && u.Scheme != "" || strings.HasPrefix(target, "#") {
				continue
			}
			targets = append(targets, target)
			lines = append(lines, i+1)
		}
	}
	return targets, lines
}

// anchors returns the anchors GitHub gives the headings of a Markdown file: lower case, every
// character but letters, digits, '-', '_' and spaces dropped, spaces made '-', and a repeated
// anchor suffixed -1, -2, ...
func anchors(t *testing.T, path string) map[string]bool {
	out := make(map[string]bool)
	for _, line := range mdProse(t, path) {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		for n := 1; out[a]; n++ {
			a = fmt.Sprintf("%s-%d", b.String(), n)
		}
		out[a] = true
	}
	return out
}

// docFiles are README.md, CONTRIBUTING.md and docs/*.md.
func docFiles(t *testing.T) []string {
	root := filepath.Join("..", "..")
	pages := docPages(t, root)
	return append(pages, filepath.Join(root, "CONTRIBUTING.md"))
}

// Every relative link of README.md, CONTRIBUTING.md and docs/*.md names a file or directory
// that exists, and a link to a heading of a Markdown page (page.md#anchor) names one it has.
func TestDocLinks(t *testing.T) {
	checked := 0
	for _, page := range docFiles(t) {
		targets, lines := relLinks(t, page)
		for i, target := range targets {
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			path := filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s:%d: link %q: no such file (%s)", page, lines[i], target, path)
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !anchors(t, path)[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading with the anchor #%s", page, lines[i], target, file, anchor)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d relative links checked: the parse went wrong", checked)
	}
}

// Every page of docs/ is reachable from the README: linked from README.md, or from the index
// docs/README.md, which README.md links.
func TestDocsReachable(t *testing.T) {
	root := filepath.Join("..", "..")
	linked := func(page string) map[string]bool {
		out := make(map[string]bool)
		targets, _ := relLinks(t, page)
		for _, target := range targets {
			file, _, _ := strings.Cut(target, "#")
			abs, _ := filepath.Abs(filepath.Join(filepath.Dir(page), filepath.FromSlash(file)))
			out[abs] = true
		}
		return out
	}
	fromReadme := linked(filepath.Join(root, "README.md"))
	index, _ := filepath.Abs(filepath.Join(root, "docs", "README.md"))
	if !fromReadme[index] {
		t.Errorf("README.md does not link docs/README.md, the index of the manual")
	}
	fromIndex := linked(index)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 10 {
		t.Fatalf("only %d pages in docs/", len(docs))
	}
	for _, d := range docs {
		abs, _ := filepath.Abs(d)
		if abs != index && !fromReadme[abs] && !fromIndex[abs] {
			t.Errorf("docs/%s is linked from neither README.md nor docs/README.md", filepath.Base(d))
		}
	}
}
