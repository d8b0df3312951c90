package uctkit

// storeRelaxed stores v at p with a plain MOV: on amd64 an aligned 8-byte
// store is atomic and ordered after the thread's earlier stores, while
// sync/atomic's Store is an XCHG, a full barrier that waits for every
// store still buffered (such as a FIFO cell handed back to a producer on
// another core). Readers use atomic loads.
//
//go:noescape
func storeRelaxed(p *uint64, v uint64)
