package longhorn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/model"
)

// capturedTable is testdata/table.json: what kube-apiserver v1.37.2 served
// for Accept: TableAccept, includeObject=None, on the CRD with Longhorn's
// printer columns (TestTableCaptured keeps it true), and what it says.
func capturedTable(t testing.TB) ([]byte, []model.Volume) {
	t.Helper()
	b, err := os.ReadFile("testdata/table.json")
	if err != nil {
		t.Fatal(err)
	}
	lh := LonghornNamespace
	return b, []model.Volume{
		{Namespace: lh, Name: "pvc-degraded", State: "attached", Robustness: model.RobustnessDegraded, Node: "w-2"},
		{Namespace: lh, Name: "pvc-faulted", State: "detached", Robustness: model.RobustnessFaulted},
		// No status: null cells.
		{Namespace: lh, Name: "pvc-fresh", Robustness: model.RobustnessUnknown},
		{Namespace: lh, Name: "pvc-healthy", State: "attached", Robustness: model.RobustnessHealthy, Node: "w-1"},
		// state 7, robustness true, currentNodeID {"a":1}: the apiserver
		// prints them as strings (where the full list's reader reads them
		// as absent; Longhorn's own CRD schema types them as strings, so
		// its apiserver refuses them).
		{Namespace: lh, Name: "pvc-number", State: "7", Robustness: model.RobustnessUnknown, Node: `{"a":1}`},
	}
}

// TestDecodeVolumeTableCaptured: the real apiserver's Table, however its
// bytes arrive, reads to its volumes.
func TestDecodeVolumeTableCaptured(t *testing.T) {
	body, want := capturedTable(t)
	for name, r := range readers(body) {
		got, cont, err := DecodeVolumeTable(r, LonghornNamespace)
		if err != nil || cont != "" || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v %q\n got %+v\nwant %+v", name, err, cont, got, want)
		}
	}
}

// TestDecodeVolumeTableCutShort: every prefix of the captured Table is an
// error, never fewer volumes.
func TestDecodeVolumeTableCutShort(t *testing.T) {
	body, _ := capturedTable(t)
	body = bytes.TrimSpace(body)
	for n := range len(body) {
		if got, _, err := DecodeVolumeTable(bytes.NewReader(body[:n]), "ns"); err == nil {
			t.Fatalf("cut at %d of %d: no error, %d volumes", n, len(body), len(got))
		}
	}
}

const columnsJSON = `"columnDefinitions":[{"name":"Name","format":"name"},{"name":"State"},{"name":"Robustness"},{"name":"Node"}]`

// TestDecodeVolumeTableOdd: hostile and odd Tables.
func TestDecodeVolumeTableOdd(t *testing.T) {
	huge := strings.Repeat("x", 300<<10)
	for _, tc := range []struct {
		name, body string
		want       []model.Volume
		cont       string
	}{
		{"cells of other types read as absent",
			`{"kind":"Table",` + columnsJSON + `,"rows":[{"cells":[7,{"a":"b"},[1],false]},{"cells":["b",null,null,null]}]}`,
			[]model.Volume{{Namespace: "ns", Robustness: model.RobustnessUnknown}, {Namespace: "ns", Name: "b", Robustness: model.RobustnessUnknown}}, ""},
		{"columns in another order, extra columns, a row's object and conditions",
			`{"kind":"Table","metadata":{"continue":"c2"},"columnDefinitions":[{"name":"Node"},{"name":"Age"},{"name":"Robustness"},{"name":"Name","format":"name"},{"name":"State"}],` +
				`"rows":[{"object":{"kind":"PartialObjectMetadata","metadata":{"namespace":"other"}},"conditions":[{"type":"Completed"}],"cells":["w-1","5m","HEALTHY","a","attached"]}]}`,
			[]model.Volume{{Namespace: "ns", Name: "a", Robustness: model.RobustnessHealthy, State: "attached", Node: "w-1"}}, "c2"},
		{"the name column is the one of format name",
			`{"kind":"Table","columnDefinitions":[{"name":"Name"},{"name":"Volume","format":"name"},{"name":"State"},{"name":"Robustness"},{"name":"Node"}],"rows":[{"cells":["x","a","s","degraded","n"]}]}`,
			[]model.Volume{{Namespace: "ns", Name: "a", Robustness: model.RobustnessDegraded, State: "s", Node: "n"}}, ""},
		{"a column named twice: the first",
			`{"kind":"Table",` + columnsJSON[:len(columnsJSON)-1] + `,{"name":"State"}],"rows":[{"cells":["a","first","faulted","","second"]}]}`,
			[]model.Volume{{Namespace: "ns", Name: "a", Robustness: model.RobustnessFaulted, State: "first"}}, ""},
		{"a column that is both the name column and State",
			`{"kind":"Table","columnDefinitions":[{"name":"State","format":"name"},{"name":"Robustness"},{"name":"Node"}],"rows":[{"cells":["a","degraded","n"]}]}`,
			[]model.Volume{{Namespace: "ns", Name: "a", Robustness: model.RobustnessDegraded, State: "a", Node: "n"}}, ""},
		{"the same, rows before the columns",
			`{"kind":"Table","rows":[{"cells":["a","degraded","n"]}],"columnDefinitions":[{"name":"State","format":"name"},{"name":"Robustness"},{"name":"Node"}]}`,
			[]model.Volume{{Namespace: "ns", Name: "a", Robustness: model.RobustnessDegraded, State: "a", Node: "n"}}, ""},
		{"rows before the columns",
			`{"rows":[{"cells":["a","attached","degraded","w-1"]},{"cells":["b",1,null,"w-2"]}],"kind":"Table",` + columnsJSON + `}`,
			[]model.Volume{{Namespace: "ns", Name: "a", Robustness: model.RobustnessDegraded, State: "attached", Node: "w-1"},
				{Namespace: "ns", Name: "b", Robustness: model.RobustnessUnknown, Node: "w-2"}}, ""},
		{"no rows", `{"kind":"Table",` + columnsJSON + `,"rows":null}`, nil, ""},
		{"huge and escaped strings",
			`{"kind":"Table",` + columnsJSON + `,"rows":[{"cells":["` + huge + `","\u0061ttached\n","healthy","w-\ud83d\ude00\u001b[2J"]}]}`,
			[]model.Volume{{Namespace: "ns", Name: huge, Robustness: model.RobustnessHealthy, State: "attached\n", Node: "w-😀\x1b[2J"}}, ""},
	} {
		got, cont, err := DecodeVolumeTable(strings.NewReader(tc.body), "ns")
		if err != nil || cont != tc.cont || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v %q\n got %.200v\nwant %.200v", tc.name, err, cont, got, tc.want)
		}
	}
}

// TestDecodeVolumeTableRejects: what is not a usable Table is an error:
// errNotTable for another object, errTableColumns for a Table without a
// needed column, a plain error for a broken one.
func TestDecodeVolumeTableRejects(t *testing.T) {
	for _, tc := range []struct {
		body string
		want error
	}{
		{`{"kind":"VolumeList","items":[{"metadata":{"name":"a"}}]}`, errNotTable},
		{`{"kind":"Status","status":"Failure","code":406}`, errNotTable},
		{`{"kind":"Table","columnDefinitions":[{"name":"Name","type":"string","format":"name"},{"name":"Age","type":"date"}],"rows":[{"cells":["a","1m"]}]}`, errTableColumns},
		{`{"kind":"Table","columnDefinitions":[{"name":"Name","format":"name"},{"name":"State"},{"name":"Robustness"}],"rows":[]}`, errTableColumns},
		{`{"kind":"Table","columnDefinitions":[{"name":"State"},{"name":"Robustness"},{"name":"Node"}],"rows":[]}`, errTableColumns},
		{`{"kind":"Table","rows":[]}`, errTableColumns},
		{`{"kind":"Table","columnDefinitions":null}`, errTableColumns},
		{`{"kind":"Table",` + columnsJSON + `,"rows":[{"cells":["a","b","c"]}]}`, nil},
		{`{"kind":"Table",` + columnsJSON + `,"rows":[{"cells":["a","b","c","d","e"]}]}`, nil},
		{`{"kind":"Table",` + columnsJSON + `,"rows":[{"cells":null}]}`, nil},
		{`{"kind":"Table",` + columnsJSON + `,"rows":[{}]}`, nil},
		{`{"kind":"Table",` + columnsJSON + `,"rows":[null]}`, nil},
		{`{"kind":"Table",` + columnsJSON + `,"rows":[{"cells":["a","b","c","d"],"cells":["a","b","c","d"]}]}`, nil},
		{`{"kind":"Table",` + columnsJSON + `,"rows":[],"rows":[]}`, nil},
		{`{"kind":"Table",` + columnsJSON + `,` + columnsJSON + `}`, nil},
		{`{"kind":"Table",` + columnsJSON + `,"rows":{"cells":[]}}`, nil},
		{`{"kind":"Table",` + columnsJSON + `,"rows":[]}{}`, nil},
		{`{"rows":[{"cells":["a"]}],"kind":"Table",` + columnsJSON + `}`, nil},
		{`{"kind":"Table",` + columnsJSON + `,"rows":[{"cells":["a","b","c",1e400]}]}`, nil},
		{``, nil},
		{`[]`, nil},
	} {
		got, _, err := DecodeVolumeTable(strings.NewReader(tc.body), "ns")
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%.120s: %v, %+v; want an error (%v)", tc.body, err, got, tc.want)
		}
	}
}

// referenceVolumeTable reads b with the apimachinery JSON decoder into maps
// and picks the cells as DecodeVolumeTable documents: it is the
// differential fuzz test's oracle.
func referenceVolumeTable(b []byte, ns string) ([]model.Volume, string, map[string]any, error) {
	var raw map[string]any
	if err := utiljson.Unmarshal(b, &raw); err != nil {
		return nil, "", nil, err
	}
	if raw == nil {
		return nil, "", nil, errors.New("not an object")
	}
	if k, _ := raw["kind"].(string); k != "Table" {
		return nil, "", nil, errNotTable
	}
	cols := map[string]int{"name": -1, "Name": -1, "State": -1, "Robustness": -1, "Node": -1}
	defs, ok := raw["columnDefinitions"].([]any)
	if !ok && raw["columnDefinitions"] != nil {
		return nil, "", nil, errors.New("columnDefinitions is not an array")
	}
	for i, d := range defs {
		m, ok := d.(map[string]any)
		if !ok {
			return nil, "", nil, errors.New("a column is not an object")
		}
		name, _ := m["name"].(string)
		format, _ := m["format"].(string)
		if format == "name" && cols["name"] < 0 {
			cols["name"] = i
		}
		if c, ok := cols[name]; ok && c < 0 && name != "name" {
			cols[name] = i
		}
	}
	if cols["name"] < 0 {
		cols["name"] = cols["Name"]
	}
	if cols["name"] < 0 || cols["State"] < 0 || cols["Robustness"] < 0 || cols["Node"] < 0 {
		return nil, "", nil, errTableColumns
	}
	var out []model.Volume
	rows, ok := raw["rows"].([]any)
	if !ok && raw["rows"] != nil {
		return nil, "", nil, errors.New("rows is not an array")
	}
	for _, r := range rows {
		m, ok := r.(map[string]any)
		if !ok {
			return nil, "", nil, errors.New("a row is not an object")
		}
		cells, ok := m["cells"].([]any)
		if !ok && m["cells"] != nil {
			return nil, "", nil, errors.New("cells is not an array")
		}
		if len(cells) != len(defs) {
			return nil, "", nil, errors.New("cells do not match the columns")
		}
		cell := func(c string) string { s, _ := cells[cols[c]].(string); return s }
		out = append(out, model.Volume{Namespace: ns, Name: cell("name"), State: cell("State"),
			Robustness: model.NormalRobustness(cell("Robustness")), Node: cell("Node")})
	}
	meta, _ := raw["metadata"].(map[string]any)
	cont, _ := meta["continue"].(string)
	return out, cont, raw, nil
}

// FuzzDecodeVolumeTable: on any bytes, however they arrive, DecodeVolumeTable
// never panics; it reads only what the map-based reference reads, to the
// same volumes; and the canonical JSON of whatever the reference reads, it
// reads to the same volumes.
func FuzzDecodeVolumeTable(f *testing.F) {
	body, _ := capturedTable(f)
	f.Add(body)
	f.Add(volumeTableJSON(f, 3))
	for _, s := range []string{
		`{"kind":"Table",` + columnsJSON + `,"rows":[{"cells":[7,{"a":"b"},[1],false]},{"cells":["b",null,null,null]}]}`,
		`{"rows":[{"cells":["a","attached","degraded","w-1"]}],"kind":"Table",` + columnsJSON + `}`,
		`{"kind":"Table","metadata":{"continue":"x"},"metadata":null,` + columnsJSON + `,"rows":null}`,
		`{"kind":"Table","columnDefinitions":[{"name":"Name"},{"name":"Volume","format":"name"},{"name":"State"},{"name":"Robustness"},{"name":"Node"}],"rows":[{"cells":["x","a","s","degraded","n"]}]}`,
		`{"kind":"Table","columnDefinitions":[{"name":"Node","format":"name"},{"name":"State"},{"name":"Robustness"}],"rows":[{"cells":["a","b","c"]}]}`,
		"{\"kind\":\"Table\"," + columnsJSON + ",\"rows\":[{\"cells\":[\"pvc-\xff\",\"a\\u00e9\",\"Healthy\",\"\\ud83d\"]}]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, cont, err := DecodeVolumeTable(bytes.NewReader(b), "ns")
		again, againCont, againErr := DecodeVolumeTable(&chunkReader{r: bytes.NewReader(b), sizes: []int{1, 3, 2}}, "ns")
		if (againErr == nil) != (err == nil) || !reflect.DeepEqual(again, got) || againCont != cont {
			t.Fatalf("in small chunks: %v %+v %q; whole: %v %+v %q", againErr, again, againCont, err, got, cont)
		}
		want, wantCont, raw, refErr := referenceVolumeTable(b, "ns")
		if err == nil && refErr != nil {
			t.Fatalf("read %+v; the reference fails: %v", got, refErr)
		}
		if err == nil && (!reflect.DeepEqual(got, want) || cont != wantCont) {
			t.Fatalf("differs from the reference:\ngot  %+v %q\nwant %+v %q", got, cont, want, wantCont)
		}
		if refErr != nil {
			return
		}
		canon, err := json.Marshal(raw)
		if err != nil {
			return // a float the reference kept that JSON cannot hold
		}
		got, cont, err = DecodeVolumeTable(bytes.NewReader(canon), "ns")
		if err != nil || !reflect.DeepEqual(got, want) || cont != wantCont {
			t.Fatalf("canonical %s: %v\ngot  %+v %q\nwant %+v %q", canon, err, got, cont, want, wantCont)
		}
	})
}

// volumeTableJSON is a Table of n volumes shaped as the captured one (the
// columns and a row of Longhorn's CRD), with the scale fixture's
// robustness.
func volumeTableJSON(t testing.TB, n int) []byte {
	t.Helper()
	body, _ := capturedTable(t)
	head, _, ok := bytes.Cut(body, []byte(`"rows":[`))
	if !ok {
		t.Fatal("testdata/table.json has no rows")
	}
	var buf bytes.Buffer
	buf.Write(head)
	buf.WriteString(`"rows":[`)
	for i := range n {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"cells":["pvc-%08d","v1","attached",%q,"True","10737418240","node-%05d",null,"3h12m"],"object":null}`,
			i, scalefixture.Robustness[i%len(scalefixture.Robustness)], i%5000)
	}
	buf.WriteString(`]}`)
	return buf.Bytes()
}

// BenchmarkDecodeVolumeTable: 10,000 rows as the apiserver sends them.
func BenchmarkDecodeVolumeTable(b *testing.B) {
	body := volumeTableJSON(b, 10000)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		vols, _, err := DecodeVolumeTable(bytes.NewReader(body), LonghornNamespace)
		if err != nil || len(vols) != 10000 {
			b.Fatal(err, len(vols))
		}
	}
}

// TestDecodeVolume: a follow-up GET's body reads as VolumeToModel reads it
// (the ownerID of a volume attached without a currentNodeID); a cut, a
// non-object or trailing data is an error.
func TestDecodeVolume(t *testing.T) {
	body := `{"metadata":{"name":"a","namespace":"ns"},"spec":{"numberOfReplicas":3},"status":{"state":"attached","robustness":"degraded","ownerID":"w-1"}}`
	want := model.Volume{Namespace: "ns", Name: "a", Replicas: 3, State: "attached", Robustness: model.RobustnessDegraded, Node: "w-1"}
	if got, err := decodeVolume(strings.NewReader(body)); err != nil || got != want {
		t.Errorf("%v %+v, want %+v", err, got, want)
	}
	for _, bad := range []string{body[:len(body)-1], body + `{}`, `[]`, `null`, ``} {
		if got, err := decodeVolume(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error, %+v", bad, got)
		}
	}
}
