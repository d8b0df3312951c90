//go:build !linux

package ucp

import (
	"context"
	"time"
)

// waitAll: see waitall_linux.go; elsewhere ifaces are waited for in turn.
func waitAll(ctx context.Context, wis []*wiface, slice time.Duration) bool {
	return false
}
