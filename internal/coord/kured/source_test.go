package kured

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kured's settings are read from its DaemonSet's container (args and
// KURED_* env); the transform keeps just that container's command, args and
// KURED_* variables, and the annotation kured's args name.
func TestKuredDaemonSetConfig(t *testing.T) {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "kured", Namespace: "ops", UID: "u", ResourceVersion: "3",
			Annotations: map[string]string{"example.com/lock": `{"nodeID":"n1","metadata":{"unschedulable":false},"created":"2026-11-29T12:00:00Z","TTL":0}`,
				"deprecated.daemonset.template.generation": "4"}},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "sidecar", Image: "busybox", Args: []string{"--lock-annotation=wrong"}},
			{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.23.0", Command: []string{"/usr/bin/kured"},
				Args: []string{"--lock-annotation", "example.com/lock", "--lock-release-delay=10m"},
				Env: []corev1.EnvVar{{Name: "KURED_NODE_ID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
					{Name: "KURED_CONCURRENCY", Value: "2"}, {Name: "SECRET", Value: "do-not-keep"}}},
		}}}},
	}
	tr, err := Transform(ds)
	if err != nil {
		t.Fatal(err)
	}
	td := tr.(*appsv1.DaemonSet)
	cs := td.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != "kured" || len(cs[0].Env) != 2 || cs[0].Env[0].Value != "" || cs[0].Env[0].ValueFrom == nil ||
		len(td.Annotations) != 1 {
		t.Fatalf("transformed %+v annotations %v", cs, td.Annotations)
	}
	l := LockOf(td)
	spec := l.Spec.(*Spec)
	if spec.Annotation != "example.com/lock" || !spec.Present || spec.Config == nil || spec.Config.Concurrency != 2 ||
		spec.Config.LockReleaseDelay != 10*time.Minute {
		t.Fatalf("lock %+v config %+v", spec, spec.Config)
	}
}
