package ucp

import "testing"

// BenchmarkProgressIdle: one Progress of a worker with a connected shm
// lane and nothing to do, the step a waiting receiver repeats.
func BenchmarkProgressIdle(b *testing.B) {
	ws, _ := shmPair(b, Config{})
	defer pinCPU(0)()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ws[1].Progress()
	}
}
