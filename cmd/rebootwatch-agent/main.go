// Command rebootwatch-agent is the in-cluster reboot-lock janitor: the lock
// engine run unattended (DESIGN §9, issue 6). Its composition root — flags,
// clients, sources, health, metrics, leader election — is agent.Main; this
// file only hands it the process.
package main

import (
	"os"

	"github.com/rebootwatch/rebootwatch/internal/agent"
)

func main() {
	os.Exit(agent.Main(os.Args[1:], os.Stdout, os.Stderr))
}
