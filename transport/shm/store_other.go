//go:build !amd64

package shm

import "sync/atomic"

// storeRelease stores v at p with release ordering (a sequentially
// consistent store where no cheaper one is written).
func storeRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
