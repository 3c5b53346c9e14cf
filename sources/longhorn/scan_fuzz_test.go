package longhorn

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"testing/iotest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/rebootwatch/rebootwatch/model"
)

// referenceVolumeList reads b as the unstructured path does (the
// apimachinery JSON decoder into maps: integers as int64, a key given twice
// keeps its last value, invalid UTF-8 becomes U+FFFD) and VolumeToModel
// each item, with DecodeVolumeList's documented rules for the list: an
// object whose "items" is an array of objects (or null), or null; or a
// VolumeList without items.
func referenceVolumeList(b []byte) ([]model.Volume, string, map[string]any, error) {
	var raw map[string]any
	if err := utiljson.Unmarshal(b, &raw); err != nil {
		return nil, "", nil, err
	}
	if raw == nil {
		return nil, "", nil, errors.New("not an object")
	}
	items, sawItems := raw["items"]
	if kind, _ := raw["kind"].(string); !sawItems && kind != "VolumeList" {
		return nil, "", nil, errors.New("not a list")
	}
	var out []model.Volume
	if items != nil {
		arr, ok := items.([]any)
		if !ok {
			return nil, "", nil, errors.New("items is not an array")
		}
		for _, it := range arr {
			m, ok := it.(map[string]any)
			if !ok && it != nil {
				return nil, "", nil, errors.New("an item is not an object")
			}
			out = append(out, VolumeToModel(&unstructured.Unstructured{Object: m}))
		}
	}
	cont, _, _ := unstructured.NestedString(raw, "metadata", "continue")
	return out, cont, raw, nil
}

// oddVolumeLists are lists DecodeVolumeList once read otherwise than the
// unstructured path.
var oddVolumeLists = map[string]string{
	// A key given twice: the last value wins, wholly.
	"status twice":   `{"items":[{"status":{"state":"attached","currentNodeID":"w-1"},"status":{"robustness":"healthy"}}]}`,
	"status null":    `{"items":[{"status":{"state":"attached"},"status":null}]}`,
	"metadata twice": `{"items":[{"metadata":{"name":"a","namespace":"ns"},"metadata":{"name":"b"}}]}`,
	"spec twice":     `{"items":[{"spec":{"numberOfReplicas":3},"spec":{}}]}`,
	"list metadata":  `{"items":[],"metadata":{"continue":"c"},"metadata":{}}`,
	// Invalid UTF-8 reads as encoding/json reads it (U+FFFD).
	"bad utf-8": "{\"items\":[{\"metadata\":{\"name\":\"pvc-\xff\xfe\"},\"status\":{\"state\":\"a\xc3\"}}]}",
}

// TestDecodeVolumeListOddEncodings: on each, DecodeVolumeList gives what the
// unstructured path gives.
func TestDecodeVolumeListOddEncodings(t *testing.T) {
	for name, body := range oddVolumeLists {
		want, wantCont, _, err := referenceVolumeList([]byte(body))
		if err != nil {
			t.Fatalf("%s: the reference: %v", name, err)
		}
		got, cont, err := DecodeVolumeList(bytes.NewReader([]byte(body)))
		if err != nil || !reflect.DeepEqual(got, want) || cont != wantCont {
			t.Errorf("%s: %v\ngot  %+v %q\nwant %+v %q", name, err, got, cont, want, wantCont)
		}
	}
	// "items" twice would need the first array's items taken back: the
	// apiserver never sends it, and it is an error, never both arrays.
	if got, _, err := DecodeVolumeList(bytes.NewReader([]byte(`{"items":[{"metadata":{"name":"a"}}],"items":[{"metadata":{"name":"b"}}]}`))); err == nil {
		t.Errorf("items twice: no error, %+v", got)
	}
}

// FuzzDecodeVolumeList: on any bytes, however they arrive, DecodeVolumeList
// never panics; it reads only valid JSON that the unstructured path reads
// too, to the same volumes; and the canonical JSON of whatever the
// unstructured path reads, it reads to the same volumes.
func FuzzDecodeVolumeList(f *testing.F) {
	fixture, _ := volumeListJSON(f, 2)
	f.Add(fixture)
	for _, s := range []string{
		`{"kind":"VolumeList","items":null,"metadata":{"continue":"x","resourceVersion":"1"}}`,
		`{"kind":"VolumeList"}`,
		`{"items":[null,{"metadata":null,"spec":"x","status":7},{"spec":{"numberOfReplicas":2E1}},{"spec":{"numberOfReplicas":12345678901234567890}}]}`,
		`{"items":[{"metadata":{"name":"pvc-\"q\"\u00e9\ud83d\ude00"},"status":{"state":"attached","ownerID":"w-\u0031"}}]}`,
		`{"items":[{"spec":{"numberOfReplicas":-0.5e-3}}],"x":[[[{"a":[true,false,null]}]]]}`,
	} {
		f.Add([]byte(s))
	}
	for _, s := range oddVolumeLists {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, cont, err := DecodeVolumeList(bytes.NewReader(b))
		if again, againCont, againErr := DecodeVolumeList(iotest.OneByteReader(bytes.NewReader(b))); (againErr == nil) != (err == nil) ||
			!reflect.DeepEqual(again, got) || againCont != cont {
			t.Fatalf("a byte at a time: %v %+v %q; whole: %v %+v %q", againErr, again, againCont, err, got, cont)
		}
		want, wantCont, raw, refErr := referenceVolumeList(b)
		if err == nil && refErr != nil {
			t.Fatalf("read %+v; the unstructured path fails: %v", got, refErr)
		}
		if err == nil && (!reflect.DeepEqual(got, want) || cont != wantCont) {
			t.Fatalf("differs from the unstructured path:\ngot  %+v %q\nwant %+v %q", got, cont, want, wantCont)
		}
		if refErr != nil {
			return
		}
		canon, err := json.Marshal(raw)
		if err != nil {
			return // a float the reference kept that JSON cannot hold
		}
		got, cont, err = DecodeVolumeList(bytes.NewReader(canon))
		if err != nil || !reflect.DeepEqual(got, want) || cont != wantCont {
			t.Fatalf("canonical %s: %v\ngot  %+v %q\nwant %+v %q", canon, err, got, cont, want, wantCont)
		}
	})
}
