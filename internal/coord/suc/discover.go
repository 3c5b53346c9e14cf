package suc

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// Served says whether the apiserver serves SUC's Plans: SUC is installed
// exactly when its CRD is (the controller reads nothing else of its own).
// It asks the discovery API, which every authenticated user may read (the
// system:discovery role), so it needs no grant beyond the Plans' own; one
// small request, whatever the cluster's size, so a cluster without SUC pays
// nothing more for it being read by default. When discovery itself fails
// (forbidden, an error, a timeout) whether SUC is installed is unknown:
// unknown says why, and served is then true, never "not installed".
func Served(ctx context.Context, d discovery.DiscoveryInterface) (served bool, unknown string) {
	gv := Group + "/" + Version
	var err error
	var has bool
	if dc, ok := d.(discovery.ServerResourcesInterfaceWithContext); ok {
		l, e := dc.ServerResourcesForGroupVersionWithContext(ctx, gv)
		err, has = e, e == nil && hasResource(l.APIResources, Resource)
	} else {
		l, e := d.ServerResourcesForGroupVersion(gv)
		err, has = e, e == nil && hasResource(l.APIResources, Resource)
	}
	switch {
	case apierrors.IsNotFound(err):
		return false, ""
	case err != nil:
		return true, fmt.Sprintf("cannot tell whether %s.%s is served (discovery of %s: %s)", Resource, Group, gv, unread(err))
	}
	return has, ""
}

func hasResource(rs []metav1.APIResource, name string) bool {
	for _, r := range rs {
		if r.Name == name {
			return true
		}
	}
	return false
}
