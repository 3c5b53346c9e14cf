package agent

import (
	"os"
	"testing"
)

// TestMain removes the agent binary the integration tests built once
// (buildAgent) after the last test.
func TestMain(m *testing.M) {
	code := m.Run()
	removeAgentBin()
	os.Exit(code)
}
