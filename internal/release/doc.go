// Package release stores a 64-bit word with release order and no locked
// instruction: every load and store before [Store] is visible to another
// core before the new value is.
//
// On amd64 a plain aligned store has that order (TSO), and the call into
// assembly keeps the compiler from moving memory accesses across it.
// sync/atomic's store is an XCHG there, a full barrier that waits until
// this core owns the cache line and its buffered stores are drained: a
// round trip to the core that last wrote the line (a FIFO cell handed
// back to a producer, a counter read by another goroutine). Elsewhere
// [Store] is sync/atomic's sequentially consistent store.
//
// Readers load the word with sync/atomic. The race detector does not see
// the assembly store, so a word written with [Store] must only be
// written by one goroutine at a time or by a protocol the caller proves.
//
// The package owns no state.
package release
