// Command compare runs UCX's ucx_perftest and ucgo's bench/perftest on the
// same tests, transports and message sizes, prints a table of both tools'
// figures with their ratios (ucgo/UCX), and plots latency and bandwidth
// against message size.
//
// The one command, from the root of the module (as root, so that rc runs
// between two network namespaces and ucx-utils can be installed):
//
//	go run ./bench/compare -o compare-out
//
// writes compare-out/table.md (the table it prints), results.json and
// results.csv (every figure of both tools) and one SVG per transport
// (shm.svg, rc.svg, rc-lo.svg): a latency panel (median one-way latency of the
// latency tests) and a bandwidth panel (overall bandwidth of the bandwidth
// tests), both log-log against message size, one colour per test, ucgo
// solid with filled markers, UCX dashed with open ones.
//
// Flags: -t tests (default am_lat,am_bw,put_lat,put_bw,tag_lat,tag_bw),
// -x transports (shm,rc,rc-lo), -s sizes (default 8 B to 1 MiB in powers of
// four), -n iterations and -w warm-up per size, -max-bytes caps the
// iterations of large sizes (iterations*size, at least 100 iterations),
// -r pairs per test and size (default 5; see Pairs below), -O outstanding operations
// of bandwidth tests (both tools), -o the output
// folder, -perftest a prebuilt bench/perftest (default: go build it),
// -ucx the ucx_perftest binary, -no-install, -timeout the time limit of
// one run of either tool (default 3m), -rt real-time priority (see
// Real-time priority below).
//
// Pairs: this host flips between a fast and a slow state (2-4x apart)
// that neither tool controls, so a ratio of two figures means something
// only when both come from the same minutes. Each repeat runs the two
// tools back to back (which of them goes first alternates), and the
// table's ratio is the median of the pairs' ratios ucgo/UCX, beside each
// tool's median figure. A row whose UCX figure moved by more than 1.5x
// between two consecutive pairs is marked † and listed under its table:
// the host changed state during that row. A size at which either tool
// says it is beyond its limit is not run again.
//
// Real-time priority (-rt): on a small host shared with other work, a
// short measured phase is decided by the scheduler rather than by the
// tool. With 8-byte messages and 20,000 iterations UCX's phase lasts about
// 2 ms and often fits in one scheduling slice, while a phase of ours that
// is preempted can stretch to a second with hundreds of forced context
// switches; the pair's ratio then measures which tool was lucky. With -rt
// every process of both tools (ucx_perftest's server and client, perftest
// and the server process it starts) runs under SCHED_RR at priority 1,
// the lowest real-time priority: above every ordinary process, so the
// phases run without being preempted by the load, and below the kernel's
// own real-time threads. Both tools get the same treatment, so a ratio
// means what it means without -rt; use -rt when the host is loaded (a load
// average near or above the CPU count) and the small-size rows jump from
// pair to pair. compare starts each tool as `chrt --rr 1 tool ...`
// (util-linux's chrt sets the policy and execs the tool, whose children
// inherit it) and checks once, before anything else, that it can: -rt
// needs root or CAP_SYS_NICE (or an RLIMIT_RTPRIO of at least 1) and says
// so otherwise. A real-time process that spins holds its CPU, so under
// -rt no tool starts without its run's time limit (-timeout), each tool
// runs in a process group of its own, and the end of the limit or an
// interrupt kills the whole group; the kernel's real-time throttling
// (sched_rt_runtime_us, by default 95 % of each second) leaves the rest
// of the host some time meanwhile. The table's header and results.json
// ("realtime") say whether -rt was used.
//
// What runs against what:
//
//   - ucx_perftest is Debian's (package ucx-utils). When it is missing
//     and compare runs as root, compare installs it with apt-get; otherwise
//     it says how.
//   - Each test, size and tool is its own run: ours is `perftest -l` (both
//     sides started by perftest; rc between two network namespaces when
//     root), UCX's is a ucx_perftest server and a client on 127.0.0.1.
//     Both pin their two processes to the first and the last CPU.
//   - shm: uct tests against UCX's posix transport (-x posix -d memory),
//     ucp tests with UCX_TLS=shm.
//   - rc: there is no RDMA device for UCX here, so UCX runs tcp over
//     loopback (-x tcp -d lo; UCX_TLS=tcp, UCX_NET_DEVICES=lo), while ours
//     runs its RoCEv2-over-UDP RC queue pairs between two namespaces.
//   - rc-lo: the same UCX runs, against ours over lo as well
//     (UCGO_PERFTEST_NO_NETNS=1), so that both tools cross the same link.
//   - uct tests need a data layout in ucx_perftest (-D); compare tries
//     short, then bcopy, then zcopy, and keeps the first that UCX accepts
//     for the size (the table names it). Ours picks short, bcopy or zcopy
//     by size itself.
//
// Figures: latency is the typical latency in µs, the same statistic in
// both tools (the lower median of the last 2048 iteration times,
// ucx_perftest's timing queue; see bench/perftest's doc): one-way for
// ping-pong tests, the time per operation posted for bandwidth tests
// (ucx_perftest's "overhead"). Bandwidth is MB/s (2^20 bytes): the
// overall figure (bytes over the wall time of the measured phase) for
// bandwidth tests, size over the typical one-way latency for latency
// tests, whose overall figures carry every stall of a loaded machine.
// Both tools count one-way messages in the rates of
// ping-pong tests. ucx_perftest sometimes prints "inf" for an average; that figure
// is recorded as 0. Sizes a tool cannot run (say am_lat beyond the
// transport's AM limit) show "–" and are listed under the table with the
// tool's message; -replot results.json writes the table and plots again
// from an earlier run without measuring.
//
// ucx_perftest's output is decoded by parseUCX (ucxparse.go; fuzz target
// FuzzParseUCX, real outputs in testdata/).
package main
