package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// envAsMain makes this test binary behave as the rebootwatch command (see
// TestMain): the completion scripts call `rebootwatch __complete …`.
const envAsMain = "REBOOTWATCH_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envAsMain) != "" {
		os.Exit(Main(os.Args[1:], OSEnv()))
	}
	testcluster.Main(m)
}

// asCommand puts this test binary on a PATH as `rebootwatch` and returns
// the environment to run a shell with.
func asCommand(t *testing.T) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(dir, "rebootwatch")); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), envAsMain+"=1", "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func completionScript(t *testing.T, shell string) string {
	t.Helper()
	env, out, errb := testEnv(demoStart)
	if code := run(context.Background(), []string{"completion", shell}, env); code != ExitOK || out.Len() == 0 {
		t.Fatalf("completion %s: exit %d, %d bytes, stderr %q", shell, code, out.Len(), errb)
	}
	p := filepath.Join(t.TempDir(), "rebootwatch."+shell)
	if err := os.WriteFile(p, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The bash script loads in a real bash and registers the completion.
func TestCompletionBashLoads(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script := completionScript(t, "bash")
	cmd := exec.Command(bash, "-c", `source "$1" && complete -p rebootwatch`, "bash", script)
	cmd.Env = asCommand(t)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-F __start_rebootwatch rebootwatch") {
		t.Fatalf("bash did not load the completion (%v):\n%s", err, out)
	}
	// The other shells' scripts are generated and name the command.
	for _, sh := range []string{"zsh", "fish", "powershell"} {
		b, err := os.ReadFile(completionScript(t, sh))
		if err != nil || !strings.Contains(string(b), "rebootwatch") {
			t.Fatalf("%s: %v", sh, err)
		}
	}
	env, _, errb := testEnv(demoStart)
	if code := run(context.Background(), []string{"completion", "tcsh"}, env); code != ExitError || !strings.Contains(errb.String(), `invalid argument "tcsh"`) {
		t.Fatalf("completion tcsh: exit %d, stderr %q", code, errb)
	}
}

// Completing real command lines in bash (with bash-completion, as a
// user's shell has it): commands, flags, flag values and the kubeconfig's
// contexts, through `rebootwatch __complete`.
func TestCompletionBashCompletes(t *testing.T) {
	t.Parallel() // a bash of its own, with a kubeconfig of its own
	const bashCompletion = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(bashCompletion); err != nil {
		if testcluster.Integration() {
			t.Fatalf("%s missing: make deps installs bash-completion", bashCompletion)
		}
		t.Skip("bash-completion not installed (make deps)")
	}
	script := completionScript(t, "bash")
	kc := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: prod-east, context: {cluster: c, user: u}}, {name: prod-west, context: {cluster: c, user: u}}, {name: lab, context: {cluster: c, user: u}}]
current-context: lab
`), 0o600); err != nil {
		t.Fatal(err)
	}
	complete := func(line string) []string {
		t.Helper()
		cmd := exec.Command("bash", "-c", `source "$1"; source "$2"
read -r -a COMP_WORDS <<< "$3"
[[ "$3" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMP_LINE="$3"; COMP_POINT=${#COMP_LINE}
__start_rebootwatch rebootwatch "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"`, "bash", bashCompletion, script, line)
		cmd.Env = append(asCommand(t), "KUBECONFIG="+kc)
		// stderr has bash's "compopt: not currently executing completion
		// function" (the function is called by hand, not from a TAB).
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v\n%s", line, err, out)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				got = append(got, l)
			}
		}
		return got
	}
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"rebootwatch wat", []string{"watch"}},
		{"rebootwatch re", []string{"reap", "release"}},
		{"rebootwatch watch --until", []string{"--until-done"}},
		{"rebootwatch --context prod", []string{"prod-east", "prod-west"}},
		{"rebootwatch release --kind ", []string{"fleetlock", "kured"}},
		{"rebootwatch --snapshot -o ", []string{"json", "text"}},
	} {
		got := complete(tc.line)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
}

// TestCompletionNeedsBashCompletionDocumented: cobra's bash script calls
// _get_comp_words_by_ref, from the bash-completion package; without
// it `source <(rebootwatch completion bash)` fails, so README says so
// where completion is documented (issue 23 §4).
func TestCompletionNeedsBashCompletionDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, para := range strings.Split(string(b), "\n\n") {
		if strings.Contains(para, "rebootwatch completion bash") && strings.Contains(para, "bash-completion") {
			return
		}
	}
	t.Fatal("README: no paragraph documenting `rebootwatch completion bash` says it needs the bash-completion package")
}
