// Package scalefixture fills a real test apiserver (internal/testenv/testcluster)
// with a cluster of realistic size for the scale benchmarks: Nodes with a
// kubelet's full status (conditions, node info, addresses and an image list,
// which is most of a real Node's bytes), Longhorn Volumes with spec and
// status, kured's DaemonSet holding a lock and a held fleetlock Lease (both
// written as the coordinators write them, via internal/coord/kured/kuredtest and internal/coord/fleetlock/fleetlocktest). It
// also reads the apiserver's apiserver_request_total, so a benchmark can
// count the requests a run made.
//
// It is test support: it must never be imported by production code, and it
// only ever talks to the apiserver it is given.
package scalefixture

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/coord/fleetlock/fleetlocktest"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured/kuredtest"
)

// Where the fixture puts things (the runbook reads them there).
const (
	LonghornNamespace = "longhorn-system"
	KuredNamespace    = "kured"
	KuredName         = "kured"
	FleetlockNS       = "default"
	// Workers is how many creates run at once while seeding.
	Workers = 32
)

// VolumeGVR is Longhorn's volume resource.
var VolumeGVR = schema.GroupVersionResource{Group: "longhorn.io", Version: "v1beta2", Resource: "volumes"}

// NodeName is the name of the i-th node.
func NodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// Fixture seeds one apiserver; it remembers how far it got, so a benchmark
// can grow the same cluster from one case to the next.
type Fixture struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Config makes the fleetlock client (its user agent names the manager).
	Config *rest.Config

	nodes, volumes int
	locks          bool
}

// Counts returns how many nodes and volumes were seeded so far.
func (f *Fixture) Counts() (nodes, volumes int) { return f.nodes, f.volumes }

// Grow seeds until the cluster holds nodes Nodes and volumes Volumes (it
// never deletes), with Workers creates at once, and the locks on first use.
// The Longhorn CRD must be installed.
func (f *Fixture) Grow(ctx context.Context, nodes, volumes int) error {
	if !f.locks {
		if err := f.seedLocks(ctx); err != nil {
			return err
		}
		f.locks = true
	}
	type job struct {
		node bool
		i    int
	}
	jobs := make(chan job)
	var failed atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < Workers; w++ {
		wg.Go(func() {
			for j := range jobs {
				var err error
				if j.node {
					err = f.createNode(ctx, j.i)
				} else {
					err = f.createVolume(ctx, j.i, max(nodes, 1))
				}
				if err != nil && !apierrors.IsAlreadyExists(err) {
					failed.Store(err)
				}
			}
		})
	}
	send := func(j job) bool {
		if failed.Load() != nil {
			return false
		}
		select {
		case jobs <- j:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for i := f.nodes; i < nodes; i++ {
		if !send(job{true, i}) {
			break
		}
	}
	for i := f.volumes; i < volumes; i++ {
		if !send(job{false, i}) {
			break
		}
	}
	close(jobs)
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f.nodes, f.volumes = max(f.nodes, nodes), max(f.volumes, volumes)
	return nil
}

// seedLocks creates the namespaces, kured's DaemonSet holding a lock for
// node 1 and fleetlock's Lease held by an id no node has (a ghost).
func (f *Fixture) seedLocks(ctx context.Context) error {
	for _, ns := range []string{LonghornNamespace, KuredNamespace} {
		_, err := f.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	labels := map[string]string{"name": "kured"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: KuredName, Namespace: KuredNamespace, Annotations: map[string]string{
			"weave.works/kured-node-lock": kuredtest.Single(NodeName(1), time.Now().Add(-20*time.Minute), 0, false)}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kured", Image: "ghcr.io/kubereboot/kured:1.17.1",
					Command: []string{"/usr/bin/kured"}, Args: []string{"--ds-name=kured", "--ds-namespace=kured", "--period=1m"}}}},
			},
		},
	}
	if _, err := f.Client.AppsV1().DaemonSets(KuredNamespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	fc, err := fleetlocktest.Client(f.Config)
	if err != nil {
		return err
	}
	_, err = fleetlocktest.Lock(ctx, fc, FleetlockNS, "default", "0123456789abcdef0123456789abcdef", "")
	return err
}

func (f *Fixture) createNode(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err := f.Client.CoreV1().Nodes().Create(ctx, Node(i), metav1.CreateOptions{})
	return err
}

// Node is node i as a kubelet registers it, with a full status.
func Node(i int) *corev1.Node {
	name := NodeName(i)
	role := "worker"
	if i < 5 {
		role = "control-plane"
	}
	t := metav1.NewTime(time.Now().Add(-time.Hour))
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"node-role.kubernetes.io/" + role: "", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
			"topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%3)},
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256), ProviderID: "bench://" + name},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{"cpu": mustQ("16"), "memory": mustQ("65851336Ki"), "pods": mustQ("110"), "ephemeral-storage": mustQ("502921020Ki")},
			Allocatable: corev1.ResourceList{"cpu": mustQ("15800m"), "memory": mustQ("64700360Ki"), "pods": mustQ("110"),
				"ephemeral-storage": mustQ("463486846963")},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available", LastHeartbeatTime: t, LastTransitionTime: t},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure", LastHeartbeatTime: t, LastTransitionTime: t},
				{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available", LastHeartbeatTime: t, LastTransitionTime: t},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: t, LastTransitionTime: t},
			},
			NodeInfo: corev1.NodeSystemInfo{BootID: fmt.Sprintf("boot-%05d", i), MachineID: fmt.Sprintf("%032x", i),
				SystemUUID: fmt.Sprintf("uuid-%05d", i), OSImage: "Ubuntu 24.04.3 LTS", KernelVersion: "6.8.0-60-generic",
				ContainerRuntimeVersion: "containerd://2.1.0", KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64"},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.200.%d.%d", i/256, i%256)},
				{Type: corev1.NodeHostName, Address: name}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			Images:          images,
		},
	}
	return n
}

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }

// images makes each node about as large as a real one (the image list is
// most of a Node's bytes).
var images = func() []corev1.ContainerImage {
	var out []corev1.ContainerImage
	for i := 0; i < 30; i++ {
		out = append(out, corev1.ContainerImage{Names: []string{
			fmt.Sprintf("registry.example/team/image-%02d@sha256:%064x", i, i),
			fmt.Sprintf("registry.example/team/image-%02d:v1.%d.0", i, i)}, SizeBytes: int64(i+1) << 22})
	}
	return out
}()

// Robustness cycles through these: one volume in nine is degraded, one
// faulted and one unknown.
var Robustness = []string{"healthy", "healthy", "healthy", "healthy", "healthy", "healthy", "degraded", "faulted", "unknown"}

// createVolume creates volume i (attached to node i mod nodes) and sets its
// status through the subresource, roughly as large as a real Longhorn volume.
func (f *Fixture) createVolume(ctx context.Context, i, nodes int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	v := Volume(i, nodes)
	status := v.Object["status"]
	delete(v.Object, "status")
	ri := f.Dynamic.Resource(VolumeGVR).Namespace(LonghornNamespace)
	u, err := ri.Create(ctx, v, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	u.Object["status"] = status
	_, err = ri.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}

// Volume is volume i (attached to node i mod nodes) with spec and status.
func Volume(i, nodes int) *unstructured.Unstructured {
	name := fmt.Sprintf("pvc-%08d", i)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "longhorn.io/v1beta2", "kind": "Volume",
		"metadata": map[string]any{"name": name, "namespace": LonghornNamespace,
			"labels": map[string]any{"longhornvolume": name, "recurring-job-group.longhorn.io/default": "enabled"}},
		"spec": map[string]any{"numberOfReplicas": int64(3), "size": "10737418240", "frontend": "blockdev",
			"dataEngine": "v1", "accessMode": "rwo", "staleReplicaTimeout": int64(30), "dataLocality": "disabled",
			"replicaAutoBalance": "ignored", "snapshotDataIntegrity": "ignored", "revisionCounterDisabled": true,
			"unmapMarkSnapChainRemoved": "ignored", "replicaSoftAntiAffinity": "ignored", "replicaZoneSoftAntiAffinity": "ignored",
			"replicaDiskSoftAntiAffinity": "ignored", "backupCompressionMethod": "lz4", "backingImage": "", "fromBackup": "",
			"encrypted": false, "nodeSelector": []any{}, "diskSelector": []any{}, "migratable": false},
	}}
	node := NodeName(i % nodes)
	now := time.Now().UTC().Format(time.RFC3339)
	cond := func(t, r string) map[string]any {
		return map[string]any{"type": t, "status": "True", "reason": r, "message": "", "lastProbeTime": "", "lastTransitionTime": now}
	}
	u.Object["status"] = map[string]any{"robustness": Robustness[i%len(Robustness)], "state": "attached",
		"currentNodeID": node, "ownerID": node, "pendingNodeID": "", "actualSize": int64(1 << 30), "frontendDisabled": false,
		"currentImage": "longhornio/longhorn-engine:v1.9.1", "kubernetesStatus": map[string]any{
			"pvName": name, "pvStatus": "Bound", "namespace": "apps", "pvcName": fmt.Sprintf("data-app-%d", i),
			"workloadsStatus": []any{map[string]any{"podName": fmt.Sprintf("app-%d-0", i), "podStatus": "Running",
				"workloadName": fmt.Sprintf("app-%d", i), "workloadType": "StatefulSet"}}},
		"conditions": []any{cond("Scheduled", ""), cond("Restore", ""), cond("TooManySnapshots", ""), cond("WaitForBackingImage", "")},
		"lastBackup": "", "lastBackupAt": "", "remountRequestedAt": now, "shareEndpoint": "", "shareState": "", "cloneStatus": map[string]any{
			"snapshot": "", "sourceVolume": "", "state": ""}}
	return u
}

// Metrics are the apiserver's counters a benchmark compares before/after.
type Metrics struct {
	// Requests is apiserver_request_total summed by "VERB resource"
	// (non-resource requests are "VERB (non-resource)").
	Requests map[string]float64
	// Listed is the objects LIST requests returned, from etcd or the watch
	// cache (apiserver_storage_list_returned_objects_total), by resource:
	// a limit=1 probe adds one, a relist of 5,000 nodes 5,000.
	Listed map[string]float64
	// OpenWatches is the watches open now, by resource
	// (apiserver_longrunning_requests{verb="WATCH"}): a WATCH is counted in
	// Requests only once it ends.
	OpenWatches map[string]float64
}

// Scrape reads the apiserver's /metrics.
func Scrape(ctx context.Context, cs kubernetes.Interface) (Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return Metrics{}, fmt.Errorf("apiserver /metrics: %w", err)
	}
	m := Metrics{Requests: map[string]float64{}, Listed: map[string]float64{}, OpenWatches: map[string]float64{}}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, labels, v, ok := sample(sc.Text())
		if !ok {
			continue
		}
		switch name {
		case "apiserver_request_total":
			verb, res := label(labels, "verb"), label(labels, "resource")
			if res == "" {
				res = "(non-resource)"
			}
			m.Requests[verb+" "+res] += v
		case "apiserver_storage_list_returned_objects_total":
			// (Its watch-cache twin, apiserver_cache_list_returned_objects_total,
			// counts the same lists again.)
			m.Listed[label(labels, "resource")] += v
		case "apiserver_longrunning_requests":
			if label(labels, "verb") == "WATCH" {
				m.OpenWatches[label(labels, "resource")] += v
			}
		}
	}
	return m, sc.Err()
}

// sample splits a Prometheus text line name{labels} value.
func sample(line string) (name, labels string, v float64, ok bool) {
	open := strings.IndexByte(line, '{')
	end := strings.LastIndexByte(line, '}')
	if open <= 0 || end < open || strings.HasPrefix(line, "#") {
		return "", "", 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
	if err != nil {
		return "", "", 0, false
	}
	return line[:open], line[open+1 : end], v, true
}

// RequestCounts is Scrape's Requests.
func RequestCounts(ctx context.Context, cs kubernetes.Interface) (map[string]float64, error) {
	m, err := Scrape(ctx, cs)
	return m.Requests, err
}

func label(labels, name string) string {
	labels = "," + labels
	i := strings.Index(labels, ","+name+`="`)
	if i < 0 {
		return ""
	}
	rest := labels[i+len(name)+3:]
	return rest[:strings.IndexByte(rest, '"')]
}

// Delta is after minus before for every "VERB resource" that moved, sorted.
func Delta(before, after map[string]float64) []Count {
	var out []Count
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out = append(out, Count{Key: k, N: d})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Count is one "VERB resource" and how many requests it saw.
type Count struct {
	Key string
	N   float64
}

// Ours says whether a "VERB resource" key is a request rebootwatch makes for
// its picture (nodes, kured's DaemonSet, Leases, Longhorn volumes,
// PodDisruptionBudgets, pods, events),
// as opposed to the apiserver's own background traffic and the benchmark's
// /metrics scrapes.
func Ours(key string) bool {
	_, res, _ := strings.Cut(key, " ")
	switch res {
	case "nodes", "daemonsets", "leases", "volumes", "poddisruptionbudgets", "pods", "events":
		return true
	}
	return false
}
