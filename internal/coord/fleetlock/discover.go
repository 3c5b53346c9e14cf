package fleetlock

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/model"
)

// This file looks for fleetlock outside the namespace whose Leases are
// read. fleetlock has no namespace flag: it keeps its Leases in its NAMESPACE
// environment variable, "default" when that is unset or empty
// (poseidon/fleetlock internal/server.go, NewServer, read at c42d494); its
// manifests set NAMESPACE from the pod's own metadata.namespace. So where
// fleetlock runs is where its Leases are: a Deployment running fleetlock's
// image says where, and fleetlock-<group> Leases of another namespace are
// its locks (or look-alikes: a name is anyone's to give). Neither is
// judged; either means that "no fleetlock Lease" in the namespace read is
// no answer for the fleet.

// Image reports whether an image reference is fleetlock's: its repository's
// last path component is "fleetlock" (quay.io/poseidon/fleetlock:v0.4.0, a
// mirror's …/fleetlock@sha256:…).
func Image(ref string) bool {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	last := ref[strings.LastIndex(ref, "/")+1:]
	if i := strings.Index(last, ":"); i >= 0 {
		last = last[:i]
	}
	return last == "fleetlock"
}

// LeaseNamespace says where the fleetlock a Deployment runs keeps its
// Leases: its container's NAMESPACE (a literal, or the pod's own
// metadata.namespace by field reference), "default" when unset or empty.
// runs is false when no container runs fleetlock's image; known is false
// when NAMESPACE comes from elsewhere (a Secret, a ConfigMap, another field).
func LeaseNamespace(d *appsv1.Deployment) (ns string, known, runs bool) {
	for _, c := range d.Spec.Template.Spec.Containers {
		if !Image(c.Image) {
			continue
		}
		ns, known = DefaultNamespace, true
		for _, e := range c.Env {
			if e.Name != "NAMESPACE" {
				continue
			}
			// The container's last definition of a name is the one it gets.
			switch {
			case e.ValueFrom == nil && e.Value == "":
				ns, known = DefaultNamespace, true
			case e.ValueFrom == nil:
				ns, known = e.Value, true
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
				ns, known = d.Namespace, true
			default:
				ns, known = "", false
			}
		}
		return ns, known, true
	}
	return "", false, false
}

// Elsewhere is what was found of fleetlock outside the namespace read.
type Elsewhere struct {
	// Read is the namespace whose Leases are read.
	Read string
	// Found says what points elsewhere: fleetlock's Deployments and the
	// fleetlock-<group> Leases of other namespaces, sorted.
	Found []string
	// Namespaces are the other namespaces fleetlock's Leases are in, by
	// that evidence, sorted.
	Namespaces []string
	// Unsearched says what could not be listed, and why.
	Unsearched []string
}

// Look lists fleetlock's Deployments and the fleetlock-<group> Leases of
// every namespace (but the node heartbeats of kube-node-lease) once, each in
// one request, and says which point to another namespace than read.
func Look(ctx context.Context, cs kubernetes.Interface, read string) Elsewhere {
	e := Elsewhere{Read: read}
	nss := map[string]bool{}
	if ds, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{}); err != nil {
		e.Unsearched = append(e.Unsearched, "deployments.apps in all namespaces: "+coord.Clip(err.Error()))
	} else {
		for i := range ds.Items {
			d := &ds.Items[i]
			ns, known, runs := LeaseNamespace(d)
			switch {
			case !runs:
			case !known:
				e.Found = append(e.Found, fmt.Sprintf("Deployment %s/%s runs fleetlock, its NAMESPACE from a reference not read", d.Namespace, d.Name))
			case ns != read:
				e.Found = append(e.Found, fmt.Sprintf("Deployment %s/%s runs fleetlock, its Leases in %q", d.Namespace, d.Name, ns))
				nss[ns] = true
			}
		}
	}
	lo := metav1.ListOptions{FieldSelector: fields.OneTermNotEqualSelector("metadata.namespace", "kube-node-lease").String()}
	if ls, err := cs.CoordinationV1().Leases("").List(ctx, lo); err != nil {
		e.Unsearched = append(e.Unsearched, "leases.coordination.k8s.io in all namespaces: "+coord.Clip(err.Error()))
	} else {
		for _, l := range ls.Items {
			if strings.HasPrefix(l.Name, Prefix) && l.Namespace != read {
				e.Found = append(e.Found, fmt.Sprintf("Lease %s/%s", l.Namespace, l.Name))
				nss[l.Namespace] = true
			}
		}
	}
	slices.Sort(e.Found)
	for ns := range nss {
		e.Namespaces = append(e.Namespaces, ns)
	}
	slices.Sort(e.Namespaces)
	return e
}

// Status is the fleetlock source's status when no fleetlock-<group> Lease
// is in the namespace read: an error naming what was found elsewhere (the
// fleet's locks may be there, unread: never "not installed"), else
// not-installed, saying where it looked.
func (e Elsewhere) Status() (model.SourceStatus, string) {
	msg := fmt.Sprintf("no %s* Lease in namespace %q", Prefix, e.Read)
	if len(e.Found) > 0 {
		// The hint first: a narrow line cuts the end.
		hint := ""
		if len(e.Namespaces) > 0 {
			hint = " (pass --fleetlock-namespace " + e.Namespaces[0] + ")"
		}
		return model.StatusError, msg + ", but fleetlock's may be elsewhere, unread" + hint + ": " + model.FirstFew(e.Found, 3)
	}
	if len(e.Unsearched) > 0 {
		return model.StatusNotInstalled, msg + "; other namespaces not searched (" + strings.Join(e.Unsearched, "; ") + ")"
	}
	return model.StatusNotInstalled, msg + ", nor a fleetlock Deployment or " + Prefix + "* Lease in any other namespace"
}
