package themes

import (
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/rebootwatch/rebootwatch/model"
	"sigs.k8s.io/yaml"
)

// colorKeys maps the keys of a theme file's "colors" section to the fields
// they set.
var colorKeys = map[string]func(t *Theme) *color.Color{
	"text":        func(t *Theme) *color.Color { return &t.Text },
	"muted":       func(t *Theme) *color.Color { return &t.Muted },
	"border":      func(t *Theme) *color.Color { return &t.Border },
	"accent":      func(t *Theme) *color.Color { return &t.Accent },
	"title":       func(t *Theme) *color.Color { return &t.Title },
	"selectionBg": func(t *Theme) *color.Color { return &t.SelectionBg },
	"selectionFg": func(t *Theme) *color.Color { return &t.SelectionFg },
	"ok":          func(t *Theme) *color.Color { return &t.OK },
	"warning":     func(t *Theme) *color.Color { return &t.Warning },
	"critical":    func(t *Theme) *color.Color { return &t.Critical },
	"info":        func(t *Theme) *color.Color { return &t.Info },
}

var topKeys = []string{"name", "base", "colors", "phases", "verdicts"}

// DefaultPath returns the user theme file's path:
// $XDG_CONFIG_HOME/rebootwatch/theme.yaml, else ~/.config/rebootwatch/theme.yaml.
// It returns "" when neither variable is set.
func DefaultPath(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "rebootwatch", "theme.yaml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "rebootwatch", "theme.yaml")
	}
	return ""
}

// LoadFile reads and validates a theme file. Errors name the file and the
// offending key.
func LoadFile(path string) (*Theme, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("theme file: %w", err)
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("theme file %s: %w", path, err)
	}
	if t.Name == "" {
		t.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return t, nil
}

// LoadUser loads the user theme file at DefaultPath when it exists. A missing
// file is not an error (nil, nil); a bad one is.
func LoadUser(getenv func(string) string) (*Theme, error) {
	p := DefaultPath(getenv)
	if p == "" {
		return nil, nil
	}
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return LoadFile(p)
}

// duplicateKey finds go-yaml's "line 3: key "ok" already set in map".
var duplicateKey = regexp.MustCompile(`line (\d+): key "([^"]*)" already set in map`)

// Parse parses a theme document (YAML or JSON):
//
//	name: solarized        # optional
//	base: dark             # built-in theme to start from (default dark)
//	colors:   {text, muted, border, accent, title, selectionBg, selectionFg, ok, warning, critical, info}
//	phases:   {idle, pending, draining, rebooting, recovering, done, down, unknown}
//	verdicts: {free, held, ghost, orphaned, expired, ambiguous, unknown}
//
// Colours are "#rgb", "#rrggbb" or an ANSI number 0-255. Unknown and duplicate keys are
// errors, so a typo never silently falls back to a default.
func Parse(b []byte) (*Theme, error) {
	// Strict: a key given twice is an error (which one would win is a
	// silent default), like an unknown key.
	j, err := yaml.YAMLToJSONStrict(b)
	if err != nil {
		if m := duplicateKey.FindStringSubmatch(err.Error()); m != nil {
			return nil, fmt.Errorf("duplicate key %q (line %s): give each key once", m[2], m[1])
		}
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(j, &doc); err != nil || doc == nil {
		return nil, errors.New("want a mapping with keys " + strings.Join(topKeys, ", "))
	}
	for _, k := range sortedAny(doc) {
		if !contains(topKeys, k) {
			return nil, fmt.Errorf("unknown key %q (known: %s)", k, strings.Join(topKeys, ", "))
		}
	}
	base := NameDark
	if v, ok := doc["base"]; ok {
		s, isStr := v.(string)
		if !isStr {
			return nil, fmt.Errorf("base: want a theme name (%s)", strings.Join(Names(), ", "))
		}
		base = s
	}
	b0, ok := Builtin(base)
	if !ok {
		return nil, fmt.Errorf("base: unknown theme %q (known: %s)", base, strings.Join(Names(), ", "))
	}
	t := b0.clone()
	t.NoColor = false
	t.Name = ""
	if v, ok := doc["name"]; ok {
		s, isStr := v.(string)
		if !isStr {
			return nil, errors.New("name: want a string")
		}
		t.Name = s
	}
	if err := section(doc, "colors", sortedKeys(colorKeys), func(k string, c color.Color) { *colorKeys[k](t) = c }); err != nil {
		return nil, err
	}
	var phases []string
	for _, p := range model.AllPhases {
		phases = append(phases, string(p))
	}
	if err := section(doc, "phases", phases, func(k string, c color.Color) { t.Phases[model.Phase(k)] = c }); err != nil {
		return nil, err
	}
	verdicts := []string{"free", "held", "ghost", "orphaned", "expired", "ambiguous", "unknown"}
	if err := section(doc, "verdicts", verdicts, func(k string, c color.Color) { t.Verdicts[model.Verdict(k)] = c }); err != nil {
		return nil, err
	}
	return t, nil
}

func section(doc map[string]any, name string, known []string, set func(string, color.Color)) error {
	v, ok := doc[name]
	if !ok || v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: want a mapping of %s to colours", name, strings.Join(known, ", "))
	}
	for _, k := range sortedAny(m) {
		if !contains(known, k) {
			return fmt.Errorf("unknown key %q (known %s keys: %s)", name+"."+k, name, strings.Join(known, ", "))
		}
		s, isStr := m[k].(string)
		if !isStr {
			if n, isNum := m[k].(float64); isNum {
				s = fmt.Sprint(n)
			} else {
				return fmt.Errorf("%s.%s: want a colour string", name, k)
			}
		}
		c, err := ParseColor(s)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", name, k, err)
		}
		set(k, c)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedAny(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
