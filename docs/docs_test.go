package docs

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's top directory, seen from this package.
const root = ".."

// design is the section → rule numbers of docs/design.md: "## N. Title" opens
// section N, and a line "M. …" inside it is its rule M.
type design map[int]map[int]bool

func readDesign(t *testing.T) design {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := design{}
	section := 0
	heading := regexp.MustCompile(`^## (\d+)\. `)
	rule := regexp.MustCompile(`^(\d+)\. `)
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if m := heading.FindStringSubmatch(line); m != nil {
			section, _ = strconv.Atoi(m[1])
			d[section] = map[int]bool{}
			continue
		}
		if strings.HasPrefix(line, "## ") {
			section = 0
			continue
		}
		if m := rule.FindStringSubmatch(line); m != nil && section > 0 {
			n, _ := strconv.Atoi(m[1])
			d[section][n] = true
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(d) == 0 {
		t.Fatal("docs/design.md has no numbered sections")
	}
	return d
}

// repoFiles walks the repository's text files that may cite the design or
// link to docs, skipping build output, the coordinators' test binaries and
// golden files.
func repoFiles(t *testing.T, exts ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			switch e.Name() {
			case ".git", "bin", "testdata", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		for _, x := range exts {
			if strings.HasSuffix(p, x) {
				out = append(out, p)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// joinComments makes a citation broken over comment lines one line again:
// "(DESIGN\n// §7)" reads "(DESIGN §7)".
var commentBreak = regexp.MustCompile(`\n[ \t]*(//|#)?[ \t]*`)

// A citation: "DESIGN" and what follows it up to the end of its clause; the
// section numbers in it are read by citedSection.
var (
	citation     = regexp.MustCompile(`DESIGN((?:[ ,]*(?:§ ?\d+(?:\.\d+)?(?: rule \d+)?|and|'s|vector|values))*)`)
	citedSection = regexp.MustCompile(`§ ?(\d+)(?:\.(\d+))?(?: rule (\d+))?`)
	// Inside design.md a bare "§N rule M" cites the page itself.
	selfCitation = regexp.MustCompile(`§ ?(\d+)(?:\.(\d+))?(?: rule (\d+))?`)
)

type cite struct {
	file          string
	section, rule int
	dotted        bool
	text          string
}

func citations(t *testing.T) []cite {
	t.Helper()
	var out []cite
	add := func(file, text string, m []string) {
		c := cite{file: file, text: text}
		c.section, _ = strconv.Atoi(m[1])
		if m[2] != "" {
			c.dotted = true
			c.rule, _ = strconv.Atoi(m[2])
		}
		if m[3] != "" {
			c.rule, _ = strconv.Atoi(m[3])
		}
		out = append(out, c)
	}
	for _, p := range repoFiles(t, ".go", ".md", ".sh", ".yaml", ".yml", "Makefile") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := commentBreak.ReplaceAllString(string(b), " ")
		rel, _ := filepath.Rel(root, p)
		if rel == filepath.Join("docs", "docs_test.go") {
			continue // its examples are not citations
		}
		if rel == filepath.Join("docs", "design.md") {
			for _, m := range selfCitation.FindAllStringSubmatch(text, -1) {
				add(rel, m[0], m)
			}
			continue
		}
		for _, cm := range citation.FindAllStringSubmatch(text, -1) {
			for _, m := range citedSection.FindAllStringSubmatch(cm[1], -1) {
				add(rel, cm[0], m)
			}
		}
	}
	return out
}

// TestDesignCitationsResolve holds that every "DESIGN §N" and "§N rule M" in
// the repository names a section (and a rule) of docs/design.md, written as
// design.md says to cite it.
func TestDesignCitationsResolve(t *testing.T) {
	d := readDesign(t)
	cs := citations(t)
	if len(cs) == 0 {
		t.Fatal("found no DESIGN § citation: the scan is broken")
	}
	for _, c := range cs {
		switch {
		case c.dotted:
			t.Errorf("%s: %q: cite a rule as \"§%d rule %d\", as docs/design.md says", c.file, c.text, c.section, c.rule)
		case d[c.section] == nil:
			t.Errorf("%s: %q: docs/design.md has no section %d", c.file, c.text, c.section)
		case c.rule != 0 && !d[c.section][c.rule]:
			t.Errorf("%s: %q: docs/design.md §%d has no rule %d", c.file, c.text, c.section, c.rule)
		}
	}
}

// TestCitationScan keeps the scanner honest: it finds the forms the code
// uses and reports the ones that do not resolve.
func TestCitationScan(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"// judges every lock (DESIGN §5), gates (DESIGN §6 rule 3).", []string{"5/0", "6/3"}},
		{"// the exit code (DESIGN\n// §7). One cluster", []string{"7/0"}},
		{"// (DESIGN §7, §9). Main", []string{"7/0", "9/0"}},
		{"// gates (DESIGN §6.3)", []string{"6/3."}},
		{"// (DESIGN §6 rule 3, issues 11 §1 and 22 §1)", []string{"6/3"}},
		{"// defaults are not DESIGN §9's", []string{"9/0"}},
		{"// the issue 11 §1 fix", nil},
	} {
		text := commentBreak.ReplaceAllString(tc.text, " ")
		var got []string
		for _, cm := range citation.FindAllStringSubmatch(text, -1) {
			for _, m := range citedSection.FindAllStringSubmatch(cm[1], -1) {
				s := m[1] + "/"
				switch {
				case m[2] != "":
					s += m[2] + "."
				case m[3] != "":
					s += m[3]
				default:
					s += "0"
				}
				got = append(got, s)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%q: got %v, want %v", tc.text, got, tc.want)
		}
	}
}

// mdLink is a Markdown link or image target: ](target) or ](target "title").
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// anchors returns the anchors of a Markdown file as GitHub renders them:
// each heading's slug (lower case, spaces to hyphens, punctuation dropped,
// a repeat numbered -1, -2, …) and every <a name="…">.
func anchors(t *testing.T, p string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	named := regexp.MustCompile(`<a name="([^"]+)"`)
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		for _, m := range named.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		s := slug(h)
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestSlug pins the heading slugs the docs link to.
func TestSlug(t *testing.T) {
	for h, want := range map[string]string{
		"7. Snapshot JSON":                   "7-snapshot-json",
		"rebootwatch — design":               "rebootwatch--design",
		"The agent: `rebootwatch-agent`":     "the-agent-rebootwatch-agent",
		"Exit codes (`--snapshot`, `watch`)": "exit-codes---snapshot-watch",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}

// TestRelativeLinksResolve holds that every relative link in the README, the
// changelog and docs/ names a file of the repository and, into a Markdown
// file, one of its headings: moving text between them must move its links.
func TestRelativeLinksResolve(t *testing.T) {
	files := []string{filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md")}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	n := 0
	for _, p := range files {
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			t.Errorf("%s is missing", p)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			file, frag, _ := strings.Cut(target, "#")
			dest := p
			if file != "" {
				dest = filepath.Join(filepath.Dir(p), file)
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %q: %s does not exist", rel, target, dest)
				continue
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !anchors(t, dest)[frag] {
				t.Errorf("%s: link %q: %s has no heading or anchor %q", rel, target, dest, frag)
			}
		}
	}
	if n == 0 {
		t.Fatal("found no relative link: the scan is broken")
	}
}

// TestEveryScreenshotIsShown holds that every picture in screenshots/ is
// shown by the README or a page of docs/: one left out after a move is
// regenerated by make screenshots but seen by nobody.
func TestEveryScreenshotIsShown(t *testing.T) {
	pngs, err := filepath.Glob(filepath.Join(root, "screenshots", "*.png"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pngs) == 0 {
		t.Fatal("no screenshots found: the scan is broken")
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, p := range append(pages, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	for _, png := range pngs {
		if !strings.Contains(all.String(), "screenshots/"+filepath.Base(png)+")") {
			t.Errorf("%s is shown nowhere in README.md or docs/", png)
		}
	}
}

// TestEveryPackageIsMapped holds that docs/architecture.md's package map
// names every Go package of the main module: by its path, or by its last
// element in a "(+ name)" note beside its parent. Modules of their own under
// hack/ (a go.mod of their own) are not this module's.
func TestEveryPackageIsMapped(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	arch := string(b)
	dirs := map[string]bool{}
	err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			switch e.Name() {
			case ".git", "bin", "testdata", "node_modules":
				return filepath.SkipDir
			}
			if p != root {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			dirs[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found %d packages: the scan is broken", len(dirs))
	}
	for d := range dirs {
		if d == "." {
			continue
		}
		if !strings.Contains(arch, "`"+d+"`") && !strings.Contains(arch, "`"+filepath.Base(d)+"`") {
			t.Errorf("docs/architecture.md's package map does not name %s", d)
		}
	}
}
