package cli

import (
	"context"
	"errors"
)

// runWatch runs `rebootwatch watch`. Owned by the watch work (issue 7);
// until it lands watch is not available.
func runWatch(ctx context.Context, env Env, c *Common, args []string) int {
	return fail(env, errors.New("watch is not built yet"))
}
