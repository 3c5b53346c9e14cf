package longhorn

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
)

// FuzzWatchDecoder: on any stream the watch decoder never panics, and each
// event it gives is what a JSON decoder reads at the same place: an object
// with a "type" and an "object", the volume VolumeToModel makes of it (the
// resourceVersion and uid as its metadata has them), or, for ERROR, the
// Status's message, reason and code. A stream cut inside an event ends with
// io.ErrUnexpectedEOF, never an event.
func FuzzWatchDecoder(f *testing.F) {
	f.Add(volumeEvents(f, 2))
	for _, s := range []string{
		`{"type":"BOOKMARK","object":{"kind":"Volume","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
		`{"object":{"kind":"Status","status":"Failure","message":"too old resource version: 1 (2)","reason":"Expired","code":410},"type":"ERROR"}`,
		`{"type":"MODIFIED","object":{"metadata":{"name":"pvc-o","namespace":"ns","annotations":"x"},"spec":[1],"status":"broken"}}` + "\n" +
			`{"type":"DELETED","object":{"metadata":{"name":"pvc-\u00e9","uid":"u"},"status":{"state":"attached","ownerID":"w"},"status":{"robustness":"healthy"}}}`,
		`{"type":"ADDED","object":{"metadata":{"name":"a"}},"object":{"spec":{"numberOfReplicas":2.5e0}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := newWatchDecoder(io.NopCloser(bytes.NewReader(b)))
		ref := json.NewDecoder(bytes.NewReader(b))
		for range 1000 {
			typ, obj, err := d.Decode()
			// Each value as apimachinery decodes it (integers as int64).
			var raw map[string]any
			var value json.RawMessage
			refErr := ref.Decode(&value)
			if refErr == nil {
				refErr = utiljson.Unmarshal(value, &raw)
			}
			if err != nil {
				if err == io.EOF && refErr != io.EOF {
					t.Fatalf("EOF where the JSON decoder reads %v, %v", raw, refErr)
				}
				return
			}
			if refErr != nil {
				t.Fatalf("event %s %+v where the JSON decoder fails: %v", typ, obj, refErr)
			}
			rawType, okType := raw["type"]
			rawObj, okObj := raw["object"].(map[string]any)
			if raw == nil || !okType || !okObj {
				t.Fatalf("event %s %+v from %v", typ, obj, raw)
			}
			if s, _ := rawType.(string); string(typ) != s {
				t.Fatalf("type %q, the JSON has %v", typ, rawType)
			}
			u := &unstructured.Unstructured{Object: rawObj}
			if typ == watch.Error {
				st := obj.(*metav1.Status)
				msg, _, _ := unstructured.NestedString(rawObj, "message")
				reason, _, _ := unstructured.NestedString(rawObj, "reason")
				code, _, _ := unstructured.NestedInt64(rawObj, "code")
				if st.Message != msg || string(st.Reason) != reason || (int64(st.Code) != code && code == int64(int32(code))) {
					t.Fatalf("status %+v from %v", st, rawObj)
				}
				continue
			}
			v := obj.(*Volume)
			if got, want := v.Model(), VolumeToModel(u); !reflect.DeepEqual(got, want) {
				t.Fatalf("volume:\ngot  %+v\nwant %+v", got, want)
			}
			if v.ResourceVersion != u.GetResourceVersion() || string(v.UID) != string(u.GetUID()) {
				t.Fatalf("identity %q %q from %v", v.ResourceVersion, v.UID, rawObj)
			}
		}
	})
}
