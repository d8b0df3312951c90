// Package reliability is the bookkeeping of ucp's reliability suite
// (ucp/reliability_test.go, run with go test -run Reliability ./...): the
// payloads that carry a sequence number and a pattern derived from it,
// the receiver's per-stream tally of what arrived (delivered once,
// duplicated, out of order, corrupted), the sender's record of how each
// request completed, and the one table row per scenario with sent,
// delivered, lost, duplicated, reordered, time to detect, time to fail
// over and time to fail back.
//
// Nothing here moves a byte or reads a clock: the suite measures, this
// package counts and prints what it is given.
package reliability
