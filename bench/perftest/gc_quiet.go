package main

import (
	"runtime"
	"runtime/debug"
)

// The measured phases run with the garbage collector off.
//
// The loops allocate nothing, but what comes before them does: the
// side's buffers, the sample recorder (8 bytes per iteration), the
// results of the size before. With one P (-l and -c give the process
// GOMAXPROCS 1), a collection that these allocations start marks
// concurrently, and its background worker gets the P only when the
// busy-polling test goroutine is preempted: at 1M iterations, the first
// collection began 63 ms after the process started and marked for 130
// ms, through two thirds of tag_bw's measured phase. While it marks,
// its worker takes the one P in turns with the loop, and every pointer
// store of the loop (a request into its pool, a message into a match
// queue) goes through the write barrier: costs that ucx_perftest, in C,
// never pays. So before each size's barrier
// quietGC collects (runtime.GC waits for the whole cycle) and turns the
// collector off (debug.SetGCPercent(-1) also waits for a cycle still
// marking) until the size's phase ends; a memory limit of twice the
// heap's size, and at least 1 GiB, still lets it run should a loop
// allocate after all.
func quietGC() (restore func()) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	limit := max(int64(ms.HeapAlloc)*2, 1<<30)
	oldLimit := debug.SetMemoryLimit(limit)
	oldPercent := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}
}
