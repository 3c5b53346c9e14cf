package sources

import (
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// object is a cached object as the sources make them: a Meta embedded.
type object struct {
	Meta
	Payload int
}

// TestMetaIsWhatClientGoReads: client-go's accessor and key function read
// a Meta's identity; what Meta does not keep reads as empty and setting it
// changes nothing; a deep copy shares no annotations; and a Meta is 72
// bytes, 160 less than the ObjectMeta it replaces.
func TestMetaIsWhatClientGoReads(t *testing.T) {
	o := &object{Meta: Meta{Name: "pvc-1", Namespace: "longhorn-system", UID: "u-1", ResourceVersion: "42",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	acc, err := meta.Accessor(o)
	if err != nil {
		t.Fatal(err)
	}
	if acc.GetName() != "pvc-1" || acc.GetNamespace() != "longhorn-system" || acc.GetUID() != "u-1" ||
		acc.GetResourceVersion() != "42" || acc.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
		t.Errorf("accessor reads %+v", acc)
	}
	if k, err := cache.MetaNamespaceKeyFunc(o); err != nil || k != "longhorn-system/pvc-1" {
		t.Errorf("key %q, %v", k, err)
	}
	acc.SetResourceVersion("43")
	acc.SetLabels(map[string]string{"a": "b"})
	acc.SetGeneration(7)
	acc.SetFinalizers([]string{"f"})
	if o.ResourceVersion != "43" || acc.GetLabels() != nil || acc.GetGeneration() != 0 || acc.GetFinalizers() != nil {
		t.Errorf("after the setters: %+v, labels %v", o.Meta, acc.GetLabels())
	}
	c := o.DeepCopy()
	c.Annotations["x"] = "y"
	if len(o.Annotations) != 1 || c.Name != o.Name {
		t.Errorf("copy %+v shares its annotations with %+v", c, o.Meta)
	}
	if got := unsafe.Sizeof(Meta{}); got != 72 || unsafe.Sizeof(metav1.ObjectMeta{})-got != 160 {
		t.Errorf("Meta is %d bytes, ObjectMeta %d", got, unsafe.Sizeof(metav1.ObjectMeta{}))
	}
}
