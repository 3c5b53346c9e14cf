package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 22 §4 with an unreachable server: nothing was read, so the report
// claims neither "no reboot lock found" nor "nothing stops the fleet", the
// JSON's unread names the nodes, the locks and the blockers, and the final
// line says why.
func TestUnreachableServerClaimsNothing(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\n" +
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {token: t}\ncurrent-context: c\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--kubeconfig", kc, "--sync-timeout", "2s", "--request-timeout", "1s", "--snapshot"}
	env, out, errb := testEnv(demoStart)
	if code := run(context.Background(), args, env); code != ExitError {
		t.Fatalf("exit %d\n%s", code, errb)
	}
	text := out.String()
	for _, bad := range []string{"no reboot lock found", "nothing stops the fleet", "no nodes\n"} {
		if strings.Contains(text, bad) {
			t.Errorf("report claims %q about a cluster it never read:\n%s", bad, text)
		}
	}
	for _, want := range []string{"locks unknown: ", "cannot tell what blocks the fleet"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(lastLine(errb.String()), "could not read the cluster") {
		t.Errorf("stderr:\n%s", errb)
	}

	env, out, errb = testEnv(demoStart)
	if code := run(context.Background(), append(args, "-o", "json"), env); code != ExitError {
		t.Fatalf("json exit %d\n%s", code, errb)
	}
	var snap model.Snapshot
	if err := json.Unmarshal(out.Bytes(), &snap); err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, u := range snap.Unread {
		fields = append(fields, u.Field)
	}
	if got := strings.Join(fields, ","); !strings.HasPrefix(got, "nodes,locks") || !strings.Contains(got, "fleet.blockers") {
		t.Fatalf("unread %+v", snap.Unread)
	}
}
