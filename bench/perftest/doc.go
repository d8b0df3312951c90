// Command perftest measures ucgo the way ucx_perftest measures UCX:
// latency, bandwidth and message rate between two processes, at the uct
// level (active messages, puts, gets and atomics on one transport) and at
// the ucp level (tag matching, RMA with packed remote keys, active
// messages, atomics).
//
// Usage:
//
//	perftest -l -t tag_lat -s 8,64,1024    # both sides on this host (no setup)
//	perftest -l -x rc -t am_lat            # rc between two network namespaces
//	perftest [options]                     # server: waits on -p for a client
//	perftest -t put_bw -s 1m HOST          # client: runs the test against HOST
//	mpiexec -n 2 perftest -t tag_bw        # the two ranks of an MPI job (PMI-1 or PMI-2)
//
// The flags are ucx_perftest's: -t test, -x transport (shm, rc), -d device
// (rc: the netdev), -s sizes (a comma list runs each size in turn), -n
// iterations, -w warm-up iterations, -O outstanding operations of
// bandwidth tests, -e error mode (none; peer: a failing peer ends the run
// with its status; failover: peer with ucp's failover on, ucp tests
// only), -C
// wildcard receives (tag tests: the receive mask is 0), -E wait mode
// (poll: busy progress; sleep: iface Arm/Wait, ucp Worker.Wait), -p TCP
// port. -l starts the server as a second process of the same binary and
// runs the client against it; --csv and --json change the output; -list
// prints the tests and transports.
//
// The client sends the test's parameters to the server over TCP (under
// mpiexec, both ranks publish theirs through PMI and refuse to run when
// they differ); both sides open the transport, allocate a buffer from
// its memory domain (ucp: Worker.MemAlloc) and exchange the iface (ucp:
// worker) address, the buffer's address and its packed remote key (see
// wire.go; decodeMessage has a fuzz target). Before each size both sides
// meet at a barrier, run the warm-up iterations, then the measured ones.
//
// Latency tests (am_lat, put_lat, add_lat, tag_lat, tag_sync_lat,
// ucp_put_lat, ucp_am_lat) are ping-pongs and report one-way latency, half
// the round trip; fadd, cswap, ucp_fadd and ucp_cswap report the round
// trip of one fetching atomic; bandwidth tests (am_bw, put_bw, get_bw,
// tag_bw, ucp_put_bw, ucp_get, ucp_am_bw, ucp_add) keep up to -O
// operations outstanding and end with a flush.
// put_lat and ucp_put_lat poll the last byte of their own buffer, as
// ucx_perftest does, so they cannot sleep (-E sleep is refused).
// tag_sync_lat is tag_lat with ucp.Endpoint.TagSendSync, which completes
// only once the peer matched the message. The ucp tests run over a
// context with only the -x transport. Endpoints use a 30 s transport
// timeout, so that an overloaded machine does not fail a run.
//
// Every measured iteration is timestamped into preallocated memory with
// the processor's time-stamp counter (internal/tsc: one RDTSC, as
// ucx_perftest's ucs_get_time, calibrated once per process against the
// monotonic clock; the monotonic clock where the counter is not
// invariant), so
// besides ucx_perftest's columns (iterations; latency average and
// overall; bandwidth and message rate, average and overall) the table
// shows the median ("typical") and the 99th percentile (internal/report).
// --json prints one object per size and line with the fields test,
// transport, size, iterations, lat_median_us, lat_avg_us, lat_p99_us,
// lat_overall_us, bw_avg_mbs, bw_mbs (overall), msg_rate_avg and msg_rate
// (overall); these names are kept stable for bench/compare. A live
// progress line (the last second's average latency and message rate) is
// shown for sizes that run longer than a second when stdout is a
// terminal. -c pins the process (every thread, GOMAXPROCS 1) to a CPU; -l
// pins its two sides to the first and the last CPU.
//
// Tests and transports are tables (tables.go). A transport's local plan
// decides where -l runs the two processes: shm on this host; rc, as root,
// between two network namespaces that -l creates (internal/netns) and
// removes, joined by a veth pair (server in one, client in the other),
// else over lo (UCGO_PERFTEST_NO_NETNS=1 asks for lo as root too). rc
// binds a UDP port the kernel picks, which its iface address carries, so
// several processes can share a host's address (mpiexec -n 2 on one
// host).
//
// A failover run streams across an injected fault instead of measuring a
// test:
//
//	perftest -l -x rc -e failover --fault linkdown@2s    # also blackhole@T, flap@T; KIND@T+LENGTH
//
// -l then builds two network namespaces joined by two veth rails
// (internal/netns), both sides open one rc iface per rail with failover
// on, and the client sends tag messages of the first -s size, -O
// outstanding, while rail 0 fails T after the start for LENGTH (default
// 1 s): its link down (linkdown), every packet dropped by an eBPF program
// (blackhole, internal/fault) or its link down and up every 200 ms
// (flap). It prints a summary and writes failover.json (messages
// completed per 10 ms bin, the fault, its removal and the failover
// events after the fault: detection, switch, the lane restored and
// fail-back, in milliseconds from the start; -1 for what did not happen;
// every event with its time) and failover.svg (the timeline with
// those instants marked) into -out (default failover-out).
package main
