package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/model"
)

// DrainRead reads, once, the pods on each of these nodes (a field
// selector per node) and every PodDisruptionBudget, converted as this
// package's sources convert them: the input of a coordinator kind's drain
// blocker (coord.Clients.Drain). A node whose pods could not be read is
// absent from pods; unread says why pods or budgets were not read.
func DrainRead(c kubernetes.Interface) func(ctx context.Context, nodes []string) (map[string][]model.Pod, []model.PDB, string) {
	return func(ctx context.Context, nodes []string) (map[string][]model.Pod, []model.PDB, string) {
		pods := map[string][]model.Pod{}
		for _, n := range nodes {
			list, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n).String()})
			if err != nil {
				continue
			}
			on := []model.Pod{}
			for i := range list.Items {
				// The selector again: a client that ignores it (a fake) lists every pod.
				if list.Items[i].Spec.NodeName == n {
					on = append(on, PodToModel(&list.Items[i]))
				}
			}
			pods[n] = on
		}
		list, err := c.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			why := fmt.Sprintf("error: %v", err)
			if apierrors.IsForbidden(err) {
				why = "forbidden: " + err.Error()
			}
			// Without the budgets no pod is known to be held: none is read.
			return nil, nil, "PodDisruptionBudgets not read: " + why
		}
		var pdbs []model.PDB
		for i := range list.Items {
			pdbs = append(pdbs, PDBToModel(&list.Items[i]))
		}
		return pods, pdbs, ""
	}
}
