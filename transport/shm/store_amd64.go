package shm

// storeRelease stores v at p with release ordering: every load and store
// before it is visible to another core before the new value is. On amd64
// a plain store has that order (TSO), and the call into assembly keeps
// the compiler from moving memory accesses across it; sync/atomic's
// store is an XCHG, a full barrier that waits until this core owns the
// cache line, a round trip to the core that last wrote it.
//
//go:noescape
func storeRelease(p *uint64, v uint64)
