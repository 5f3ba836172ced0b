package core_test

import (
	"context"

	"better-compute.dev/compute/core"
)

func coreCaller(ctx context.Context) (string, bool) {
	c, ok := core.CallerFrom(ctx)
	return c.PrincipalID, ok
}
