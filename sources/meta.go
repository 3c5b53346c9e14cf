package sources

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Meta is the object metadata an informer's cache keeps of an object a
// source decodes itself (sources/kube's Node, sources/longhorn's Volume):
// its name, namespace, uid and resourceVersion, and annotations only on the
// BOOKMARK that ends a WatchList's initial events (the
// k8s.io/initial-events-end annotation client-go's reflector looks for).
// It is 72 bytes where a metav1.ObjectMeta is 232: 160 bytes less for each
// of the thousands of objects a cache holds.
//
// Meta implements metav1.Object, which client-go's key functions and
// reflector read. As metav1.Object documents for an object that does not
// support a field, every other field reads as its zero value and setting it
// does nothing; no cache these sources fill has a caller that sets one.
type Meta struct {
	Name            string
	Namespace       string
	UID             types.UID
	ResourceVersion string
	Annotations     map[string]string
}

// DeepCopy returns a copy that shares nothing with m.
func (m *Meta) DeepCopy() Meta {
	c := *m
	c.Annotations = maps.Clone(m.Annotations)
	return c
}

var _ metav1.Object = (*Meta)(nil)

// GetObjectMeta makes any type embedding a Meta a metav1.ObjectMetaAccessor
// too, so meta.Accessor finds it either way.
func (m *Meta) GetObjectMeta() metav1.Object { return m }

// GetNamespace implements metav1.Object.
func (m *Meta) GetNamespace() string { return m.Namespace }

// SetNamespace implements metav1.Object.
func (m *Meta) SetNamespace(namespace string) { m.Namespace = namespace }

// GetName implements metav1.Object.
func (m *Meta) GetName() string { return m.Name }

// SetName implements metav1.Object.
func (m *Meta) SetName(name string) { m.Name = name }

// GetUID implements metav1.Object.
func (m *Meta) GetUID() types.UID { return m.UID }

// SetUID implements metav1.Object.
func (m *Meta) SetUID(uid types.UID) { m.UID = uid }

// GetResourceVersion implements metav1.Object.
func (m *Meta) GetResourceVersion() string { return m.ResourceVersion }

// SetResourceVersion implements metav1.Object.
func (m *Meta) SetResourceVersion(version string) { m.ResourceVersion = version }

// GetAnnotations implements metav1.Object.
func (m *Meta) GetAnnotations() map[string]string { return m.Annotations }

// SetAnnotations implements metav1.Object.
func (m *Meta) SetAnnotations(ann map[string]string) { m.Annotations = ann }

// GetGenerateName implements metav1.Object: Meta keeps no generateName.
func (m *Meta) GetGenerateName() string { return "" }

// SetGenerateName implements metav1.Object: it does nothing, as Meta keeps no generateName.
func (m *Meta) SetGenerateName(string) {}

// GetGeneration implements metav1.Object: Meta keeps no generation.
func (m *Meta) GetGeneration() int64 { return 0 }

// SetGeneration implements metav1.Object: it does nothing, as Meta keeps no generation.
func (m *Meta) SetGeneration(int64) {}

// GetSelfLink implements metav1.Object: Meta keeps no selfLink.
func (m *Meta) GetSelfLink() string { return "" }

// SetSelfLink implements metav1.Object: it does nothing, as Meta keeps no selfLink.
func (m *Meta) SetSelfLink(string) {}

// GetCreationTimestamp implements metav1.Object: Meta keeps no creationTimestamp.
func (m *Meta) GetCreationTimestamp() metav1.Time { return metav1.Time{} }

// SetCreationTimestamp implements metav1.Object: it does nothing, as Meta keeps no creationTimestamp.
func (m *Meta) SetCreationTimestamp(metav1.Time) {}

// GetDeletionTimestamp implements metav1.Object: Meta keeps no deletionTimestamp.
func (m *Meta) GetDeletionTimestamp() *metav1.Time { return nil }

// SetDeletionTimestamp implements metav1.Object: it does nothing, as Meta keeps no deletionTimestamp.
func (m *Meta) SetDeletionTimestamp(*metav1.Time) {}

// GetDeletionGracePeriodSeconds implements metav1.Object: Meta keeps no deletionGracePeriodSeconds.
func (m *Meta) GetDeletionGracePeriodSeconds() *int64 { return nil }

// SetDeletionGracePeriodSeconds implements metav1.Object: it does nothing, as Meta keeps no deletionGracePeriodSeconds.
func (m *Meta) SetDeletionGracePeriodSeconds(*int64) {}

// GetLabels implements metav1.Object: Meta keeps no labels.
func (m *Meta) GetLabels() map[string]string { return nil }

// SetLabels implements metav1.Object: it does nothing, as Meta keeps no labels.
func (m *Meta) SetLabels(map[string]string) {}

// GetFinalizers implements metav1.Object: Meta keeps no finalizers.
func (m *Meta) GetFinalizers() []string { return nil }

// SetFinalizers implements metav1.Object: it does nothing, as Meta keeps no finalizers.
func (m *Meta) SetFinalizers([]string) {}

// GetOwnerReferences implements metav1.Object: Meta keeps no ownerReferences.
func (m *Meta) GetOwnerReferences() []metav1.OwnerReference { return nil }

// SetOwnerReferences implements metav1.Object: it does nothing, as Meta keeps no ownerReferences.
func (m *Meta) SetOwnerReferences([]metav1.OwnerReference) {}

// GetManagedFields implements metav1.Object: Meta keeps no managedFields.
func (m *Meta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields implements metav1.Object: it does nothing, as Meta keeps no managedFields.
func (m *Meta) SetManagedFields(managedFields []metav1.ManagedFieldsEntry) {}
