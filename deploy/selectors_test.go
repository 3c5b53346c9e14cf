package deploy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// kubePrometheusStackSelector is what kube-prometheus-stack's Prometheus
// selects ServiceMonitors and PrometheusRules with under its default values
// (prometheus.prometheusSpec.serviceMonitorSelectorNilUsesHelmValues and
// ruleSelectorNilUsesHelmValues are true, the selectors themselves empty):
// matchLabels release: <its Helm release name>, in every namespace
// (serviceMonitorNamespaceSelector and ruleNamespaceSelector {}).
func kubePrometheusStackSelector(t *testing.T, release string) labels.Selector {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"release": release}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkSelected: every ServiceMonitor and PrometheusRule in objs is selected
// by a kube-prometheus-stack installed as release, and both kinds are there.
func checkSelected(t *testing.T, what string, objs []Object, release string) {
	t.Helper()
	sel := kubePrometheusStackSelector(t, release)
	kinds := map[string]bool{}
	for _, o := range objs {
		u, ok := o.Object.(*unstructured.Unstructured)
		if !ok || (u.GetKind() != "ServiceMonitor" && u.GetKind() != "PrometheusRule") {
			continue
		}
		kinds[u.GetKind()] = true
		if !sel.Matches(labels.Set(u.GetLabels())) {
			t.Errorf("%s: %s %s/%s has labels %v: kube-prometheus-stack (release %q) selects %s and never picks it up",
				what, u.GetKind(), u.GetNamespace(), u.GetName(), u.GetLabels(), release, sel)
		}
	}
	if !kinds["ServiceMonitor"] || !kinds["PrometheusRule"] {
		t.Errorf("%s: kinds %v, want a ServiceMonitor and a PrometheusRule", what, kinds)
	}
}

// TestMonitoringMatchesKubePrometheusStack (issue 23 §3): deploy/monitoring
// and the chart's defaults carry the label kube-prometheus-stack's default
// selectors match for its usual release name, and the chart's values move
// it to another release name.
func TestMonitoringMatchesKubePrometheusStack(t *testing.T) {
	checkSelected(t, "deploy/monitoring", monitoringObjects(t), "kube-prometheus-stack")
	v := defaultValues
	v.set = []string{"serviceMonitor.enabled=true", "prometheusRule.enabled=true"}
	checkSelected(t, "chart defaults", render(t, v), "kube-prometheus-stack")
	v.set = append(v.set, "monitoringLabels.release=monitoring")
	checkSelected(t, "chart monitoringLabels.release=monitoring", render(t, v), "monitoring")
}
