package agent

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rebootwatch/rebootwatch/deploy"
	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar"
	"github.com/rebootwatch/rebootwatch/internal/coord/flatcar/flatcartest"
	"github.com/rebootwatch/rebootwatch/internal/coord/kured/kuredtest"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// renderChart renders deploy/helm/rebootwatch-agent as release
// rebootwatch-agent in namespace rebootwatch with the --set values.
func renderChart(t *testing.T, set ...string) []deploy.Object {
	t.Helper()
	helm := testcluster.Require(t, "helm")[0]
	home := t.TempDir()
	args := []string{"template", "rebootwatch-agent", filepath.Join(moduleRoot(t), "deploy", "helm", "rebootwatch-agent"), "--namespace", "rebootwatch",
		// The chart requires the image a user built and pushed (docs/agent.md#install).
		"--set", "image.repository=registry.example/rebootwatch-agent"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helm, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template %v: %v\n%s", set, err, errb.String())
	}
	objs, err := deploy.Decode("helm template", out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// chartAgent applies the chart rendered with set (and its namespace) and
// starts the agent binary out of cluster with the rendered Deployment's own
// args, the ServiceAccount's token and loopback bind addresses.
func chartAgent(t *testing.T, c *testcluster.Cluster, bin string, set ...string) *agentProc {
	t.Helper()
	admin := c.Client(t)
	objs := renderChart(t, set...)
	ns := deploy.Object{File: "namespace", Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rebootwatch"}}}
	applyObjects(t, c, append([]deploy.Object{ns}, objs...))
	var args []string
	for _, o := range objs {
		d, ok := o.Object.(*appsv1.Deployment)
		if !ok {
			continue
		}
		for _, a := range d.Spec.Template.Spec.Containers[0].Args {
			switch {
			case strings.HasPrefix(a, "--health-probe-bind-address="):
				a = "--health-probe-bind-address=127.0.0.1:0"
			case strings.HasPrefix(a, "--metrics-bind-address="):
				a = "--metrics-bind-address=127.0.0.1:0"
			}
			args = append(args, a)
		}
	}
	if args == nil {
		t.Fatal("the chart rendered no Deployment")
	}
	kc := writeKubeconfig(t, c.URL, mintToken(t, admin))
	return startAgentArgs(t, bin, "agent", append([]string{"--kubeconfig=" + kc}, args...))
}

// TestIntegrationChartFleetlockOnly: on a cluster without kured, the chart
// with kured.enabled=false gives an agent that reports kured disabled,
// reaps a ghost fleetlock Lease and turns Ready.
func TestIntegrationChartFleetlockOnly(t *testing.T) {
	c := agentCluster(t)
	bin := buildAgent(t)
	admin := c.Client(t)
	createNode(t, admin, "n2", "22222222222222222222222222222222", time.Now().Add(-3*time.Hour))
	// Held by testZincatiID, whose machine is no node's: a ghost.
	createFleetLease(t, admin, testZincatiID, time.Now().Add(-2*time.Hour))

	a := chartAgent(t, c, bin, "kured.enabled=false")
	a.waitHeartbeat(t, "the ghost fleetlock Lease reaped, kured disabled", func(hb heartbeat) bool {
		l, ok := fleetlockLock(hb)
		return ok && l.Verdict == model.VerdictGhost && l.Outcome == model.OutcomeDone &&
			sourceStatus(hb, model.SourceKured) == model.StatusDisabled
	})
	if h := fleetHolder(t, admin); h != "" {
		t.Fatalf("lease still held by %q", h)
	}
	eventually(t, "/readyz is 200", func() (bool, string) { return a.probe("/readyz") == 200, a.tail(3) })
}

// TestIntegrationChartKuredOnly: on a cluster without fleetlock, the chart
// with fleetlock.enabled=false (no grant on any Lease of fleetlock's
// namespace) gives an agent that reports fleetlock disabled, reaps a ghost
// kured lock and turns Ready.
func TestIntegrationChartKuredOnly(t *testing.T) {
	c := agentCluster(t)
	bin := buildAgent(t)
	admin := c.Client(t)
	createNode(t, admin, "n2", "22222222222222222222222222222222", time.Now().Add(-3*time.Hour))
	createKured(t, admin, kuredtest.Single("gone-node", time.Now().Add(-time.Hour), 0, false))

	a := chartAgent(t, c, bin, "fleetlock.enabled=false")
	a.waitHeartbeat(t, "the kured ghost reaped, fleetlock disabled", func(hb heartbeat) bool {
		l, ok := kuredLock(hb)
		return ok && l.Verdict == model.VerdictGhost && l.Outcome == model.OutcomeDone &&
			sourceStatus(hb, model.SourceFleetlock) == model.StatusDisabled
	})
	eventually(t, "/readyz is 200", func() (bool, string) { return a.probe("/readyz") == 200, a.tail(3) })
}

// TestIntegrationChartDefaultsNameMissingKured: the chart's defaults on a
// cluster without kured's DaemonSet: the agent stays unready and says, on
// /readyz and in one log line, that the configured kured DaemonSet is
// missing and how to turn kured off.
func TestIntegrationChartDefaultsNameMissingKured(t *testing.T) {
	c := agentCluster(t)
	bin := buildAgent(t)
	admin := c.Client(t)
	createNode(t, admin, "n2", "22222222222222222222222222222222", time.Now().Add(-3*time.Hour))

	a := chartAgent(t, c, bin)
	var body string
	eventually(t, "/readyz names the missing kured DaemonSet", func() (bool, string) {
		body = a.readyzBody()
		return strings.Contains(body, "kube-system/kured not found") && strings.Contains(body, "kured.enabled=false"), body
	})
	if a.probe("/readyz") != 503 {
		t.Errorf("/readyz %q is not 503", body)
	}
	var told int
	for _, l := range a.lines(t) {
		if m, _ := l["msg"].(string); strings.HasPrefix(m, "configured coordinator unusable") {
			told++
			if l["coordinator"] != "kured" || !strings.Contains(l["message"].(string), "kube-system/kured not found") {
				t.Errorf("log line %v", l)
			}
		}
	}
	if told != 1 {
		t.Errorf("%d 'configured coordinator unusable' lines, want 1:\n%s", told, a.tail(20))
	}
}

// readyzBody returns /readyz's text ("" when unreachable).
func (p *agentProc) readyzBody() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.healthAddr+"/readyz", nil)
	if err != nil {
		return ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestIntegrationChartReadsInstalledCoordinators (issue 32 §2): the chart's
// defaults read every installed coordinator without being asked. On a
// cluster whose reboots run under the system-upgrade-controller (its Plan
// CRD served, a failed job that left its node cordoned) and the Flatcar
// update operator (its operator's Deployment, its agent's label on a
// node), the agent run with the chart's args and grants (kured and
// fleetlock off: neither runs here; no --coordinators) reports suc and
// flatcar ok and names SUC's wedge as the fleet's blocker (the filter,
// coordinators.kinds, is rendered in deploy's TestHelmCoordinatorKinds).
func TestIntegrationChartReadsInstalledCoordinators(t *testing.T) {
	c := agentCluster(t)
	bin := buildAgent(t)
	admin := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// SUC is read wherever its Plans are served: the shared apiserver is
	// left without them.
	suctest.InstallCRDForTest(t, c.Dynamic(t), c.Client(t).Discovery())
	sucNS := c.Namespace(t, "system-upgrade")
	suctest.DeleteAtEnd(t, admin, sucNS, false)
	node, kind, err := suctest.Wedge(ctx, admin, c.Dynamic(t), sucNS, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	fns := c.Namespace(t, "reboot-coordinator")
	op, err := admin.AppsV1().Deployments(fns).Create(ctx, flatcartest.Deployment(fns, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.AppsV1().Deployments(fns).Delete(context.Background(), op.Name, metav1.DeleteOptions{})
	})
	createNode(t, admin, "flatcar-1", "33333333333333333333333333333333", time.Now().Add(-3*time.Hour))
	fa, err := flatcartest.AgentClient(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	if err := flatcartest.Write(ctx, fa, "flatcar-1", flatcartest.AgentStarted); err != nil {
		t.Fatal(err)
	}

	a := chartAgent(t, c, bin, "kured.enabled=false", "fleetlock.enabled=false")
	hb := a.waitHeartbeat(t, "suc and flatcar read, SUC's wedge the fleet's blocker", func(hb heartbeat) bool {
		return sourceStatus(hb, suc.Source) == model.StatusOK && sourceStatus(hb, flatcar.Source) == model.StatusOK &&
			hb.Blocker != nil && string(hb.Blocker.Kind) == kind && hb.Blocker.Node == node
	})
	if sourceStatus(hb, model.SourceKured) != model.StatusDisabled {
		t.Errorf("kured %q, want disabled", sourceStatus(hb, model.SourceKured))
	}
	for _, l := range a.lines(t) {
		if m, _ := l["msg"].(string); m == "starting" && l["coordinators"] != "all" {
			t.Errorf("start line: coordinators %v, want all", l["coordinators"])
		}
	}
}
