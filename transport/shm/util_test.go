package shm

import (
	"context"
	"time"
)

func timeoutCtx(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	_ = cancel // released by the timer
	return ctx
}
