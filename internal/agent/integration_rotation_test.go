package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestIntegrationTokenRotation: the agent reads its token from a file (as
// in a pod, where the kubelet rotates the projected token). When the token
// it started with is invalidated and a new one is written to the file, the
// agent first logs the rejected calls, then recovers without a restart:
// the first 401 makes it read the file again (kubeclient.RereadTokenOn401),
// where client-go alone would keep the rejected token for up to a minute.
// The test has an apiserver of its own (privateAgentCluster): it deletes a
// Secret that binds a token, which no other test may see.
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

	errorsBefore := apiErrorCount(t, a.metrics(t))
	token2 := mintToken(t, admin)
	writeToken(token2)
	if err := admin.CoreV1().Secrets("rebootwatch").Delete(ctx, sec.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The apiserver caches a token's authentication for a few seconds:
	// token1 is invalid once a request with it is refused.
	eventually(t, "the apiserver refuses token1", func() (bool, string) {
		code := statusWithToken(t, c.URL, token1)
		return code == 401, fmt.Sprintf("GET /version with token1: %d", code)
	})
	refused := time.Now()
	// The agent's next call with token1 is refused (counted in
	// rebootwatch_api_errors_total), then it reads the file again.
	eventually(t, "the agent has a call refused", func() (bool, string) {
		n := apiErrorCount(t, a.metrics(t))
		return n > errorsBefore, fmt.Sprintf("rebootwatch_api_errors_total %v, before the rotation %v", n, errorsBefore)
	})
	// From then on it works with token2, without a restart: three ok
	// heartbeats in a row and no further refused call among them.
	var after float64
	var recovered time.Duration
	eventually(t, "ok again with the re-read token", func() (bool, string) {
		hbs := a.heartbeats(t)
		n := len(hbs)
		if n < 3 {
			return false, a.tail(2)
		}
		for _, hb := range hbs[n-3:] {
			if hb.Result != resultOK {
				return false, a.tail(2)
			}
		}
		now := apiErrorCount(t, a.metrics(t))
		if after == 0 || now != after {
			after = now
			return false, fmt.Sprintf("refused calls still growing: %v", now)
		}
		recovered = time.Since(refused)
		return true, ""
	})
	t.Logf("MEASURED token rotation: ok again %s after the apiserver began refusing token1", recovered.Round(100*time.Millisecond))
	// Not a speed target: client-go alone keeps a token file's token for
	// 50-60 s after it read it (at the agent's start, seconds before the
	// rotation), so ok within 25 s is the re-read on the 401.
	if recovered > 25*time.Second {
		t.Errorf("ok again only %s after token1 was refused: the token file was not read again on the 401", recovered.Round(time.Second))
	}
	a.stop(t, syscall.SIGTERM)
	mustNotContainToken(t, token1, a)
	mustNotContainToken(t, token2, a)
}

// apiErrorCount sums rebootwatch_api_errors_total over its verbs.
func apiErrorCount(t *testing.T, metrics string) float64 {
	t.Helper()
	var sum float64
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "rebootwatch_api_errors_total{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// statusWithToken is the HTTP status of GET /version with a bearer token.
func statusWithToken(t *testing.T, server, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, server+"/version", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test apiserver's self-signed certificate
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
