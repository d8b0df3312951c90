//go:build race

package verbs

import (
	"runtime"
	"unsafe"
)

// wireSync stands for the network between a process's posts and the
// packets that reach it, for the race detector. A device places remote
// writes into registered memory, and reads it for READ responses, from
// whichever goroutine runs its engine, in answer to packets the peer sent
// because of something this process did earlier, often on another device
// (the rendezvous receiver posts its RTR on one lane and the data arrives
// on every lane of a striped transfer; a get on one lane reads what a put
// on another wrote before it completed). The packets travel through
// sendmmsg and recvmmsg, which carry no race annotation (unlike the
// standard library's read and write), so without one the detector would
// see these accesses as unordered. As the standard library does for its
// I/O, a post releases wireSync; a device acquires it before it touches
// memory for the peer and releases it after (raceTouched), because the
// acknowledgement or response it sends next can cause the peer's next
// request, which may reach another device. Accesses by devices are so
// ordered as they happen in time; what the detector still reports is the
// program touching memory while a device works on it without a post or
// completion in between.
var wireSync byte

func racePosted() { runtime.RaceReleaseMerge(unsafe.Pointer(&wireSync)) }

func raceArrived() { runtime.RaceAcquire(unsafe.Pointer(&wireSync)) }

func raceTouched() { runtime.RaceReleaseMerge(unsafe.Pointer(&wireSync)) }
