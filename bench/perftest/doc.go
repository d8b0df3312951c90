// Command perftest measures ucgo's transports the way ucx_perftest measures
// UCX: latency, bandwidth and message rate of active messages, puts, gets
// and atomics between two processes.
//
// Usage:
//
//	perftest -l -t am_lat -s 8,64,1024     # both sides on this host (no setup)
//	perftest [options]                     # server: waits on -p for a client
//	perftest -t put_bw -s 1m HOST          # client: runs the test against HOST
//
// The flags are ucx_perftest's: -t test, -x transport, -s sizes (a comma
// list runs each size in turn), -n iterations, -w warm-up iterations, -O
// outstanding operations of bandwidth tests, -e error mode (none, peer,
// failover), -C wildcard receives, -E wait mode (poll: busy progress;
// sleep: iface Arm/Wait), -p TCP port. -l starts the server as a second
// process of the same binary and runs the client against it; --csv and
// --json change the output; -list prints the tests and transports.
//
// The client sends the test's parameters to the server over TCP; both sides
// open an iface, allocate a buffer from the memory domain and exchange the
// iface address, the buffer's address and its packed remote key (see
// wire.go; decodeMessage has a fuzz target). Before each size both sides
// meet at a barrier, run the warm-up iterations, then the measured ones.
//
// Latency tests (am_lat, put_lat, add_lat) are ping-pongs and report
// one-way latency, half the round trip; fadd and cswap report the round
// trip of one fetching atomic; bandwidth tests (am_bw, put_bw, get_bw)
// keep up to -O operations outstanding and flush at the end. Every
// measured iteration is timestamped into preallocated memory, so the table
// shows the median ("typical") and the 99th percentile besides the average
// and the overall figures (internal/report). A live progress line is shown
// for sizes that run longer than a second when stdout is a terminal.
//
// Tests and transports are tables (tables.go): the ucp tests (tag_lat,
// tag_bw, tag_sync_lat, ucp_put_lat, ucp_put_bw, ucp_get, ucp_am_lat,
// ucp_am_bw) are listed but report that they need package ucp, and -x rc
// reports that transport/rc is not available yet. A transport's local plan
// decides where -l runs the two processes; the rc transport is meant to use
// two network namespaces there.
package main
