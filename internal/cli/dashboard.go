package cli

import (
	"context"
	"errors"
)

// runDashboard opens the interactive dashboard. Owned by the TUI work
// (issue 5); until it lands the dashboard is not available.
func runDashboard(ctx context.Context, env Env, c *Common) int {
	return fail(env, errors.New("the dashboard is not built yet: use --snapshot or watch"))
}
