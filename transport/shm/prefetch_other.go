//go:build linux && !amd64

package shm

// prefetchW does nothing where no prefetch for writing is written.
func prefetchW(p *byte) {}
