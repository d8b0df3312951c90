//go:build !amd64

package uctkit

import "sync/atomic"

// storeRelaxed stores v at p (a sequentially consistent store where no
// cheaper one is written).
func storeRelaxed(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
