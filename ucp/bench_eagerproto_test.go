package ucp

import "testing"

// BenchmarkEagerProtoCPU is BenchmarkTagCPU for 4 KiB eager messages
// sent by eager zero copy (the default ZcopyThresh) and by eager bcopy
// (ZcopyThresh above the size): the CPU cost of each protocol's path in
// ucp, over shm.
func BenchmarkEagerProtoCPU(b *testing.B) {
	for _, c := range []struct {
		name  string
		zcopy int
	}{{"zcopy", 4096}, {"bcopy", 1 << 30}} {
		b.Run(c.name, func(b *testing.B) { benchTagCPU(b, Config{ZcopyThresh: c.zcopy}, 4096) })
	}
}
