package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestIntegrationTokenRotation: the agent reads its token from a file (as
// in a pod, where client-go re-reads the projected token). When the token
// it started with is invalidated and a new one is written to the file, the
// agent first logs the rejected calls, then recovers without a restart.
// The re-read is client-go's, on its own clock (about a minute), in the
// agent's process: the test has an apiserver of its own so that minute
// overlaps the package's other long tests (privateAgentCluster).
func TestIntegrationTokenRotation(t *testing.T) {
	c, bin, _ := setupOn(t, privateAgentCluster(t))
	admin := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createNode(t, admin, "n1", testMachineID, time.Now().Add(-3*time.Hour))
	createKured(t, admin, "")

	// token1 is bound to a Secret: deleting the Secret invalidates it.
	sec, err := admin.CoreV1().Secrets("rebootwatch").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token-binding"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Secrets("rebootwatch").Delete(context.Background(), sec.Name, metav1.DeleteOptions{})
	})
	exp := int64(3600)
	tr, err := admin.CoreV1().ServiceAccounts("rebootwatch").CreateToken(ctx, "rebootwatch-agent", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp,
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: sec.Name, UID: sec.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token1 := tr.Status.Token
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	writeToken := func(tok string) {
		tmp := tokenFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, tokenFile); err != nil {
			t.Fatal(err)
		}
	}
	writeToken(token1)
	kc := writeKubeconfigUser(t, c.URL, fmt.Sprintf("{tokenFile: %q}", tokenFile))

	a := startAgentProc(t, bin, "agent-rotation", kc, "--interval=1s", "--request-timeout=5s", "--leader-elect=false")
	a.waitHeartbeat(t, "an ok iteration with token1", func(hb heartbeat) bool { return hb.Result == resultOK })

	token2 := mintToken(t, admin)
	writeToken(token2)
	if err := admin.CoreV1().Secrets("rebootwatch").Delete(ctx, sec.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rotated := time.Now()
	a.waitHeartbeat(t, "token1 rejected", func(hb heartbeat) bool {
		return hb.Result == resultError && strings.Contains(hb.APIError, "Unauthorized")
	})
	eventually(t, "ok again with the re-read token", func() (bool, string) {
		hbs := a.heartbeats(t)
		lastErr := -1
		for i, hb := range hbs {
			if hb.Result == resultError {
				lastErr = i
			}
		}
		for _, hb := range hbs[lastErr+1:] {
			if hb.Result == resultOK && lastErr >= 0 {
				return true, ""
			}
		}
		return false, a.tail(2)
	})
	t.Logf("MEASURED token rotation: recovered %s after token1 was invalidated (client-go re-reads the token file about once a minute)", time.Since(rotated).Round(time.Second))
	a.stop(t, syscall.SIGTERM)
	mustNotContainToken(t, token1, a)
	mustNotContainToken(t, token2, a)
}
