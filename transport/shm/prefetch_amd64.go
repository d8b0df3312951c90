//go:build linux

package shm

// prefetchW fetches the cache line at p for writing, so that a later
// store finds it owned by this core. It never faults and changes no
// memory. (PREFETCHW; processors without it treat it as a no-op.)
//
//go:noescape
func prefetchW(p *byte)
