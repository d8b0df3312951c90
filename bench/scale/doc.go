// Command scale measures how ucgo's costs grow with the number of
// connected peers: the time to connect N endpoints, the memory one
// process spends per connected peer (resident memory, mapped segments and
// file descriptors), and the tag ping-pong latency to one peer while N are
// connected.
//
//	go run ./bench/scale -x shm -n 1,4,16,64,256 -o scale-out
//	go run ./bench/scale -x rc -n 1,4,16,64,256
//
// One process (the measuring side) opens one worker; -procs child
// processes (re-executions of the same binary) open the peer workers
// between them, each serving its workers on goroutines that poll while
// there is work and for 5 ms after, then sleep in Worker.Wait. The
// measuring side connects the peers in steps (the -n list, each step
// adding peers to those already connected): for each new endpoint it
// sends an active message and waits for every answer, so a step is timed
// until all its endpoints carry traffic. After each step it collects
// garbage and reads, from /proc/self, its resident memory (VmRSS), its
// mappings of shared-memory segments (memfd) with their size, and its
// open descriptors, then runs -iters tag ping-pongs of 8 bytes with the
// first peer and reports their median one-way latency.
//
// rc runs over lo here (-x rc): every process binds its own UDP port, so
// hundreds of queue pairs share one host.
//
// Output: a table on stdout, with the growth per peer between the first
// and the last step; -o DIR also writes results.json and scale.svg (the
// four figures against the number of peers, log-log). -json prints the
// results as JSON instead of the table.
//
// Nothing here should grow faster than linearly in the number of peers:
// per-peer figures that rise with N show where it does.
package main
