// Command kubectl-rebootwatch is rebootwatch as a kubectl plugin: kubectl
// runs it for `kubectl rebootwatch …` (any kubectl-<name> on the PATH is
// one), passing every argument after the plugin's name and its own
// environment (KUBECONFIG). The commands and flags are rebootwatch's, with
// kubectl's cluster flags; only the name in help and hints differs. Like
// cmd/rebootwatch it only wires internal/cli to the process.
package main

import (
	"os"

	"github.com/rebootwatch/rebootwatch/internal/cli"
)

func main() {
	os.Exit(cli.MainPlugin(os.Args[1:], cli.OSEnv()))
}
