// Package deploy holds rebootwatch-agent's Kubernetes manifests (apply with
// `kubectl apply -k deploy/`), its Helm chart (helm/rebootwatch-agent, whose
// default render the kustomize files equal; components/kured-off,
// components/fleetlock-off and components/coordinators-off equal its
// kured.enabled=false, fleetlock.enabled=false and coordinators.enabled=false),
// its monitoring (monitoring/:
// ServiceMonitor, PrometheusRule alerts, Grafana dashboard) and the
// Dockerfile of its image. The manifests are embedded so tests can validate
// them and apply them, as written, to a real API server. It must hold no
// logic beyond reading and decoding those files.
package deploy

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Manifests are the YAML files of this directory (kustomization.yaml and
// the resources it lists).
//
//go:embed *.yaml
var Manifests embed.FS

// Monitoring is deploy/monitoring/: the ServiceMonitor, the PrometheusRule
// and the Grafana dashboard.
//
//go:embed monitoring
var Monitoring embed.FS

// PrometheusRules returns monitoring/prometheusrule.yaml's spec as a
// Prometheus rule file (groups: …), the form promtool and Prometheus read.
func PrometheusRules() ([]byte, error) {
	b, err := Monitoring.ReadFile("monitoring/prometheusrule.yaml")
	if err != nil {
		return nil, err
	}
	var pr struct {
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &pr); err != nil {
		return nil, fmt.Errorf("prometheusrule.yaml: %w", err)
	}
	if len(pr.Spec.Groups) == 0 {
		return nil, errors.New("prometheusrule.yaml has no rule groups")
	}
	return yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
}

// Kustomization is the part of kustomization.yaml this package reads.
type Kustomization struct {
	Namespace string   `json:"namespace"`
	Resources []string `json:"resources"`
}

// ReadKustomization parses kustomization.yaml.
func ReadKustomization() (Kustomization, error) {
	var k Kustomization
	b, err := Manifests.ReadFile("kustomization.yaml")
	if err != nil {
		return k, err
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		return k, fmt.Errorf("kustomization.yaml: %w", err)
	}
	return k, nil
}

// Object is one decoded manifest with the file it came from.
type Object struct {
	File   string
	Object runtime.Object
}

// Objects decodes every resource kustomization.yaml lists, in order, with
// client-go's scheme (strict: an unknown field is an error).
func Objects() ([]Object, error) {
	k, err := ReadKustomization()
	if err != nil {
		return nil, err
	}
	if len(k.Resources) == 0 {
		return nil, errors.New("kustomization.yaml lists no resources")
	}
	var out []Object
	for _, f := range k.Resources {
		b, err := Manifests.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("kustomization.yaml lists %s: %w", f, err)
		}
		objs, err := Decode(f, b)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Decode decodes a multi-document YAML stream (file names it in errors):
// kinds client-go knows strictly (an unknown field is an error), others
// (the Prometheus Operator's ServiceMonitor and PrometheusRule) as
// unstructured objects.
func Decode(file string, b []byte) ([]Object, error) {
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var out []Object
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s document %d: %w", file, i, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("%s document %d: %w", file, i, err)
		}
		if !scheme.Scheme.Recognizes(tm.GroupVersionKind()) {
			u := &unstructured.Unstructured{}
			if err := yaml.UnmarshalStrict(doc, &u.Object); err != nil {
				return nil, fmt.Errorf("%s document %d: %w", file, i, err)
			}
			out = append(out, Object{File: file, Object: u})
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s document %d: %w", file, i, err)
		}
		out = append(out, Object{File: file, Object: obj})
	}
	return out, nil
}

func stripComments(b []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}
