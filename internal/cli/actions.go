package cli

import (
	"context"
	"fmt"
)

// runAction runs `rebootwatch release|reap`. Owned by the lock engine work
// (issue 4); until it lands the actions are not available.
func runAction(ctx context.Context, env Env, c *Common, action string, args []string) int {
	return fail(env, fmt.Errorf("%s is not built yet", action))
}
