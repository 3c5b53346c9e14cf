package longhorn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/model"
)

// volumeListJSON is a VolumeList of n volumes as kube-apiserver v1.37.2
// serves the scale benchmark's volumes (testdata/volume.json is one of them,
// read back from the apiserver: 3.5 KB with its managedFields), and what
// VolumeToModel reads of it.
func volumeListJSON(t testing.TB, n int) ([]byte, []model.Volume) {
	t.Helper()
	item, err := os.ReadFile("testdata/volume.json")
	if err != nil {
		t.Fatal(err)
	}
	item = bytes.TrimSpace(item)
	var buf bytes.Buffer
	buf.WriteString(`{"apiVersion":"longhorn.io/v1beta2","items":[`)
	want := make([]model.Volume, 0, n)
	for i := range n {
		it := bytes.ReplaceAll(item, []byte("pvc-00000007"), fmt.Appendf(nil, "pvc-%08d", i))
		it = bytes.Replace(it, []byte(`"robustness":"faulted"`), fmt.Appendf(nil, `"robustness":%q`, scalefixture.Robustness[i%len(scalefixture.Robustness)]), 1)
		var u unstructured.Unstructured
		if err := json.Unmarshal(it, &u.Object); err != nil {
			t.Fatal(err)
		}
		want = append(want, VolumeToModel(&u))
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(it)
	}
	buf.WriteString(`],"kind":"VolumeList","metadata":{"resourceVersion":"42"}}`)
	return buf.Bytes(), want
}

// readers are the ways a body may arrive: whole, a byte at a time, in odd
// chunks (so every token crosses the decoder's window somewhere).
func readers(body []byte) map[string]io.Reader {
	return map[string]io.Reader{
		"whole":    bytes.NewReader(body),
		"one byte": iotest.OneByteReader(bytes.NewReader(body)),
		"half":     iotest.HalfReader(bytes.NewReader(body)),
		"chunks":   &chunkReader{r: bytes.NewReader(body), sizes: []int{1, 7, 4093, 65535, 3, 65536, 13}},
	}
}

type chunkReader struct {
	r     io.Reader
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	n := c.sizes[c.i%len(c.sizes)]
	c.i++
	return c.r.Read(p[:min(n, len(p))])
}

// TestDecodeVolumeListFixture: at the fixture's size and shape, however the
// bytes arrive, the decoder reads what VolumeToModel reads.
func TestDecodeVolumeListFixture(t *testing.T) {
	body, want := volumeListJSON(t, 300)
	for name, r := range readers(body) {
		got, cont, err := DecodeVolumeList(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cont != "" || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %d volumes (continue %q), want %d; first %+v, want %+v", name, len(got), cont, len(want), got[:min(1, len(got))], want[0])
		}
	}
}

// TestDecodeVolumeListOddValues: escapes, strings longer than the decoder's
// window, numbers in every JSON form, nulls, odd types, unknown fields at
// every level and whitespace everywhere read as encoding/json and
// VolumeToModel read them.
func TestDecodeVolumeListOddValues(t *testing.T) {
	long := strings.Repeat("é\\\"x", 40000) // > 64 KiB, with escapes throughout
	body := `
	{ "kind" : "VolumeList" , "apiVersion":"longhorn.io/v1beta2",
	  "metadata" : { "resourceVersion":"1", "continue" : "c\u00e9\/t" , "remainingItemCount": 1e3 },
	  "unknown": [ { "a": [ 1, -2.5e-3, true, false, null, "\ud83d\ude00" ] }, [], {} ],
	  "items" : [
	    { "metadata": { "name": "pvc-\"q\"", "namespace": "ns\t1", "labels": {"x": "` + long + `"} },
	      "spec": { "numberOfReplicas": 3.0, "size": "1" },
	      "status": { "robustness": "degraded", "state": "attached", "currentNodeID": "", "ownerID": "w-\u0031",
	                  "conditions": [ { "type": "x", "message": "` + long + `" } ] } },
	    null,
	    { "metadata": null, "spec": "x", "status": 7 },
	    { "metadata": { "name": 5, "namespace": ["a"] }, "spec": { "numberOfReplicas": -2 },
	      "status": { "robustness": { "a": "b" }, "state": "detached", "ownerID": "w-2" } },
	    { "metadata": { "name": "big" }, "spec": { "numberOfReplicas": 12345678901234567890 } },
	    { "metadata": { "name": "exp" }, "spec": { "numberOfReplicas": 2E1 } },
	    { }
	  ]
	}
	`
	var raw map[string]any
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatalf("the test's JSON: %v", err)
	}
	var want []model.Volume
	for _, it := range raw["items"].([]any) {
		m, _ := it.(map[string]any)
		want = append(want, VolumeToModel(&unstructured.Unstructured{Object: m}))
	}
	for name, r := range readers([]byte(body)) {
		got, cont, err := DecodeVolumeList(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cont != "cé/t" {
			t.Errorf("%s: continue %q", name, cont)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", name, got, want)
		}
	}
	if want[0].Name != `pvc-"q"` || want[0].Node != "w-1" || want[0].Replicas != 3 || want[3].Replicas != -2 || want[3].Node != "" || want[5].Replicas != 20 {
		t.Errorf("VolumeToModel itself changed: %+v", want)
	}
}

// TestDecodeVolumeListCutShort: a response cut anywhere (a dropped
// connection) is an error, never a shorter list.
func TestDecodeVolumeListCutShort(t *testing.T) {
	body, _ := volumeListJSON(t, 2)
	body = bytes.Replace(body, []byte(`"pvc-00000001"`), []byte(`"pvc-\u0030\"1"`), 1)
	full := bytes.TrimSpace(body)
	for i := range len(full) {
		if _, _, err := DecodeVolumeList(bytes.NewReader(full[:i])); err == nil {
			t.Fatalf("cut at %d of %d (%q…): no error", i, len(full), full[max(0, i-20):i])
		}
	}
	if _, _, err := DecodeVolumeList(bytes.NewReader(full)); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeVolumeListRejectsBadJSON: whatever is skipped is still checked.
func TestDecodeVolumeListRejectsBadJSON(t *testing.T) {
	for _, body := range []string{
		`{"kind":"VolumeList","items":[]}x`,
		`{"kind":"VolumeList","items":[],}`,
		`{"kind":"VolumeList","items":[,]}`,
		`{"kind":"VolumeList","items":[{"spec":{"size":01}}]}`,
		`{"kind":"VolumeList","items":[{"spec":{"size":1.}}]}`,
		`{"kind":"VolumeList","items":[{"spec":{"size":tru}}]}`,
		`{"kind":"VolumeList","items":[{"spec":{"size":"a` + "\n" + `"}}]}`,
		`{"kind":"VolumeList","items":[{"spec":{"size" 1}}]}`,
		`{"kind":"VolumeList","items":[{"spec":{"size":[1 2]}}]}`,
		`{"kind":"VolumeList","items":[{"spec":{"x":"\q"}}]}`,
		`{"kind":"VolumeList","items":["a"]}`,
		`{"kind":"VolumeList","items":[{}] "metadata":{}}`,
		`{"kind":"VolumeList","items":[{"metadata":{"name":"a"}}], "x": ` + strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2) + `}`,
	} {
		if got, _, err := DecodeVolumeList(strings.NewReader(body)); err == nil {
			t.Errorf("%.80q: no error (%+v)", body, got)
		} else if json.Valid([]byte(body)) && !strings.Contains(body, `["a"]`) && !strings.Contains(body, "[[[") {
			t.Errorf("%.80q is valid JSON, yet: %v", body, err)
		}
	}
}

// BenchmarkDecodeVolumeList decodes the scale benchmark's 10,000 volumes
// (35 MB of JSON, as the apiserver sends them to --snapshot).
func BenchmarkDecodeVolumeList(b *testing.B) {
	body, want := volumeListJSON(b, 10000)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, _, err := DecodeVolumeList(bytes.NewReader(body))
		if err != nil || len(got) != len(want) {
			b.Fatal(err, len(got))
		}
	}
	b.ReportMetric(float64(len(body))/float64(len(want)), "bytes/volume")
}
