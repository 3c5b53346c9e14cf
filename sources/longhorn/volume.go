package longhorn

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
)

// Volume is what the source keeps of a Longhorn Volume, in the informer's
// cache and in the lists and watch events it decodes (decode.go): its
// identity and the few fields the model and its blockers read. It is never
// an unstructured map.
//
// Its metadata is a sources.Meta, not a metav1.ObjectMeta (160 bytes
// larger): only the name, namespace, uid and resourceVersion (and, on the
// BOOKMARK that ends a WatchList's initial events, the
// k8s.io/initial-events-end annotation the reflector looks for).
type Volume struct {
	sources.Meta
	// Replicas is spec.numberOfReplicas.
	Replicas int
	// Robustness is status.robustness, normalised (model.NormalRobustness).
	Robustness model.Robustness
	// State is status.state (attached, detached, ...).
	State string
	// Node is status.currentNodeID, or status.ownerID while attached
	// without a currentNodeID.
	Node string
}

// GetObjectKind returns no type metadata: a Volume carries none (the
// informer knows what it watches).
func (v *Volume) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (v *Volume) DeepCopyObject() runtime.Object {
	c := *v
	c.Meta = v.Meta.DeepCopy()
	return &c
}

// Model is the volume as the model sees it.
func (v *Volume) Model() model.Volume {
	return model.Volume{Namespace: v.Namespace, Name: v.Name, Robustness: v.Robustness, State: v.State,
		Replicas: v.Replicas, Node: v.Node}
}

// VolumeList is a list of Volumes as the informer's list returns it.
type VolumeList struct {
	metav1.ListMeta
	Items []Volume
}

// GetObjectKind returns no type metadata, as Volume's.
func (l *VolumeList) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (l *VolumeList) DeepCopyObject() runtime.Object {
	c := &VolumeList{}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	if l.Items != nil {
		c.Items = make([]Volume, len(l.Items))
		for i := range l.Items {
			c.Items[i] = *l.Items[i].DeepCopyObject().(*Volume)
		}
	}
	return c
}

// volumeFromUnstructured is what the source keeps of a (full or stripped)
// unstructured Longhorn Volume (the dynamic client's, in the demo).
func volumeFromUnstructured(u *unstructured.Unstructured) *Volume {
	v := newVolume(u.GetUID(), u.GetResourceVersion(), VolumeToModel(u))
	return &v
}

// newVolume is the Volume of the model's volume m with its uid and
// resourceVersion, whichever way m was read (decoded or unstructured).
func newVolume(uid types.UID, resourceVersion string, m model.Volume) Volume {
	return Volume{
		Meta:     sources.Meta{Name: m.Name, Namespace: m.Namespace, UID: uid, ResourceVersion: resourceVersion},
		Replicas: m.Replicas, Robustness: m.Robustness, State: m.State, Node: m.Node,
	}
}
