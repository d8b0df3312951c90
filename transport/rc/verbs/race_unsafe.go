//go:build race

package verbs

import (
	"runtime"
	"unsafe"
)

// wireSync stands for the network between a process's posts and the
// packets that reach it, for the race detector. A device places remote
// writes and atomics into registered memory from whichever goroutine runs
// its engine, in answer to packets the peer sent because of something
// this process posted earlier, often on another device (the rendezvous
// receiver posts its RTR on one lane and the data arrives on every lane
// of a striped transfer). The packets travel through sendmmsg and
// recvmmsg, which carry no race annotation (unlike the standard
// library's read and write), so without one the detector would see the
// program's reads of a buffer before it handed it out again and the
// device's later writes into it as unordered. As the standard library
// does for its I/O, a post releases wireSync and a remote write or atomic
// acquires it before it touches memory. The engine's own packets
// (acknowledgements, responses) release nothing, so two devices placing
// data into the same memory stay unordered unless the program orders
// them.
var wireSync byte

func racePosted() { runtime.RaceReleaseMerge(unsafe.Pointer(&wireSync)) }

func raceArrived() { runtime.RaceAcquire(unsafe.Pointer(&wireSync)) }
