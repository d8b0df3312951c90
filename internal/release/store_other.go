//go:build !amd64

package release

import "sync/atomic"

// Store stores v at p with release order (a sequentially consistent
// store where no cheaper one is written).
func Store(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
