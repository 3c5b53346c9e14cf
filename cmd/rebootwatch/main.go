// Command rebootwatch is the dashboard, snapshot, watch and action CLI for
// Kubernetes node reboot cycles. It only wires internal/cli to the process;
// it holds no logic.
package main

import (
	"os"

	"github.com/rebootwatch/rebootwatch/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], cli.OSEnv()))
}
