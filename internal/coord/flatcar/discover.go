package flatcar

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LabelRebootNeeded is the label FLUO's update agent sets on its node each
// time it starts ("false", with the reboot-needed and reboot-in-progress
// annotations, in the same Update) and to "true" when an update waits for a
// reboot (pkg/agent/agent.go: process, updateStatusCallback). A node that
// carries it has run FLUO's agent.
const LabelRebootNeeded = Prefix + "reboot-needed"

// Discover says whether FLUO is installed, reading as little as can tell
// it: first the nodes its agent labelled (a label selector the apiserver
// filters, limit 1: one small answer whatever the cluster's size, where
// every node's annotations would cost the whole node list), then, when no
// node carries its label, the Deployment running its operator (named by
// deployment, "" to look in every namespace). Not installed is a claim
// made only when both were read and neither is there: when either read
// fails (forbidden, an error) whether FLUO is installed is unknown, and
// unknown says why (installed is then true, never "not installed").
func Discover(ctx context.Context, c kubernetes.Interface, deployment string) (installed bool, unknown string) {
	const why = "cannot tell whether the Flatcar update operator is installed: "
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelRebootNeeded, Limit: 1})
	if err != nil {
		return true, why + "nodes labelled " + LabelRebootNeeded + ": " + unread(err)
	}
	if len(nodes.Items) > 0 || deployment != "" {
		// A named operator is looked for by the full read, which says
		// when it is missing.
		return true, ""
	}
	list, err := c.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return true, why + "no node carries its agent's label, and its operator's Deployment could not be looked for: " + unread(err)
	}
	for i := range list.Items {
		if _, ok := OperatorContainer(&list.Items[i]); ok {
			return true, ""
		}
	}
	return false, ""
}
