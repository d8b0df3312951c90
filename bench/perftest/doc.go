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
// prints the tests and transports; -cpuprofile FILE writes Go's CPU
// profile of the process to FILE (under -l, the server's to
// FILE.server), the input of default.pgo (see the tag_bw section).
//
// The client sends the test's parameters to the server over TCP (under
// mpiexec, both ranks publish theirs through PMI and refuse to run when
// they differ); both sides open the transport, allocate a buffer from
// its memory domain (ucp: Worker.MemAlloc) and exchange the iface (ucp:
// worker) address, the buffer's address and its packed remote key (see
// wire.go; decodeMessage has a fuzz target). Before each size both sides
// meet at a barrier, run the warm-up iterations, then the measured ones.
// The TCP barrier polls its socket for up to 20 ms before it blocks on
// it, so that the process keeps running and Go's sysmon thread does not
// restart at its shortest period into the phase that follows; while it
// polls it progresses the side's iface or worker, as ucx_perftest's
// barrier does, so that a send posted last (a bandwidth test's done
// message, which ends the peer's measured phase) leaves at once and not
// when a background goroutine gets the CPU (barrier_progress.go). Before,
// rc's 8-byte tag_bw with -n 2000 ran at 89 thousand messages/s, a
// fixed 20 ms in each measured phase; now at 880 thousand:
//
//	UCGO_PERFTEST_NO_NETNS=1 chrt -r 1 perftest -l -x rc -t tag_bw -s 8 -n 2000 -w 200 --json
//
// Latency tests (am_lat, put_lat, add_lat, tag_lat, tag_sync_lat,
// ucp_put_lat, ucp_am_lat) are ping-pongs and report one-way latency, half
// the round trip; fadd, cswap, ucp_fadd and ucp_cswap report the round
// trip of one fetching atomic; bandwidth tests (am_bw, put_bw, get_bw,
// tag_bw, ucp_put_bw, ucp_get, ucp_am_bw, ucp_add) keep up to -O
// operations outstanding and end with a flush. am_bw runs ucx_perftest's
// flow control of active messages: the sender keeps at most 127 (its
// fc_window) unacknowledged, the receiver acknowledges every half window
// with an AM of the test's size, and the sender ends when the last
// message is acknowledged, so that neither side fills the other's FIFO
// whichever of them starts first.
// put_bw with puts that fit PutShort is ucx_perftest's uct put_bw loop
// with the short layout (put_short.go): one put_short per iteration, each
// followed by the iteration's timestamp, the endpoint, buffer, address
// and key read once before the loop, a put refused for back-pressure
// retried after a progress call, and, as ucx_perftest's send_b does, one
// progress call after every 16th put that completed at once (an shm put
// leaves nothing to progress, but ucx_perftest's loop pays for the call).
// put_lat with short puts runs the same put and progress per message.
// Over rc that progress call runs the engine, which sends the puts
// batched so far: 8-byte put_bw over lo (UCGO_PERFTEST_NO_NETNS=1, -n
// 20000, chrt -r 1) moves about 6.5 MB/s with it against 11.4 without
// (three alternated rounds each), still 8-11 times UCX tcp's figure.
// put_lat and ucp_put_lat poll the last byte of their own buffer, as
// ucx_perftest does, so they cannot sleep (-E sleep is refused).
// tag_sync_lat is tag_lat with ucp.Endpoint.TagSendSync, which completes
// only once the peer matched the message. The ucp tests run over a
// context with only the -x transport. Endpoints use a 30 s transport
// timeout, so that an overloaded machine does not fail a run.
//
// Each size's warm-up and measured phase run with Go's garbage collector
// off (gc_quiet.go): before the barrier a side collects once and sets
// the GC percent to -1 until the phase ends, so that no collection
// started by the allocations before the phase (the recorder of the
// samples, the previous size's results) marks through it. With one P,
// such a collection's worker runs only when the polling goroutine is
// preempted, and its marking, with every pointer store of the loop going
// through the write barrier, lasted 130 ms, two thirds of a 1M-message
// tag_bw phase; the measured loops allocate nothing, and a memory limit
// still bounds the heap should one do so.
//
// Every measured iteration is timestamped into preallocated memory with
// the processor's time-stamp counter (internal/tsc: one RDTSC, as
// ucx_perftest's ucs_get_time, calibrated once per process against the
// monotonic clock; the monotonic clock where the counter is not
// invariant; like ucx_perftest's timing queue, each iteration keeps the
// raw difference of two counter reads, and the phase's samples become
// nanoseconds after it ends). Latencies are one-way (half an iteration)
// for ping-pong tests and per iteration otherwise; the figures of a size
// are (internal/report):
//
//   - typical (lat_median_us): ucx_perftest's typical latency, the same
//     statistic. ucx_perftest's libperf keeps the times of only the last
//     2048 iterations (TIMING_QUEUE_SIZE) in a ring, its timing queue,
//     and reports the element of index floor((n-1)/2) of those n sorted
//     times (its percentile rank, -R, defaults to 50): the median of the
//     last 2048 iterations, the lower middle one of an even count. Ours
//     takes the same element of the same last 2048 iteration times, not
//     the median of the whole phase, which differs from it when the
//     phase's start and end run at different speeds. One difference is
//     left: at the end of a bandwidth test ucx_perftest puts the time of
//     its final flush into the queue as one more entry (it replaces the
//     oldest of 2048; with fewer iterations than that it is not counted);
//     ours keeps the flush out, which moves the median by at most one
//     rank.
//   - 99%ile (lat_p99_us): the 99th percentile of every iteration of the
//     phase (nearest rank); ucx_perftest has no such column (-R 99 would
//     turn its typical into the 99th percentile of its last 2048).
//   - average (lat_avg_us, and bw_avg_mbs and msg_rate_avg derived from
//     it): the mean time of every iteration of the phase. ucx_perftest's
//     average is the elapsed time since its last progress report (one a
//     second) over the iterations since then, end of the final flush
//     included: the same figure, flush aside, for phases under a second.
//   - overall (lat_overall_us, bw_mbs, msg_rate): the wall time of the
//     whole measured phase, final flush or acknowledgement included, over
//     its iterations, as ucx_perftest's overall.
//
// Bandwidths are MB/s of 2^20 bytes and rates messages per second, one-way
// messages for ping-pongs, as ucx_perftest's. Runs of more than 2^24
// iterations keep every k-th iteration for the all-sample figures and
// still every one of the last 2048 for the typical latency.
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
// # Where an 8-byte shm put spends its time
//
// put_bw with 8-byte short puts, the initiator's loop per iteration, from
// cpu-clock profiles of the initiating process of each tool (8M puts at
// SCHED_RR 1; shares of the samples in the loop's functions):
//
//	perf record -e cpu-clock -F 25000 -- perftest -l -x shm -t put_bw -s 8 -n 8000000 -w 1000
//	perf record -e cpu-clock -F 25000 -- ucx_perftest 127.0.0.1 -x posix -d memory -t put_bw -D short -s 8 -n 8000000 -c 0
//
//	                    ucgo                              UCX posix
//	timestamp and loop  86 %  tsc.now 73 %, putShortStream  80 %  the runner's loop with
//	                          with the inlined stamp 13 %         ucx_perf_update inlined
//	the put             14 %  Endpoint.PutShort             20 %  uct_sm_ep_put_short,
//	                                                              memcpy@plt, libc's memmove
//
// In one compare run in the host's fast state (-n 100000, 5 pairs) an
// iteration took 13.4-14.0 ns here and 18 ns in ucx_perftest: about 10
// ns of either is the RDTSC, which both loops execute once per put
// (ucx_perftest's ucs_get_time); the put is about 2 ns here, 3.5 ns in
// UCX. Both loops also progress once every 16 puts. PutShort stores the
// 8 bytes with one move and pays, where UCX's put_short pays nothing,
// the checks that the error model needs on every operation: the key's
// view (the endpoint, the bounds and the right to write in two
// compares), the endpoint's error, the peer's disabled word and the
// key's generation word, about ten loads of lines that stay in this
// core's cache. UCX's put_short instead calls memcpy through the PLT
// even for 8 bytes.
//
// What the loop no longer does: the meter's mark was a call per
// iteration (a frame, AddCount's append and the progress-line check,
// every live register of the loop reloaded after it). Its per-iteration
// part is now stamp, inlined into the loop, which writes the tick count
// into the recorder's memory; the rest runs once every 256 iterations.
// BenchmarkPutBWLoopCPU, 15 alternated rounds, went from 24.0 to 22.0
// CPU-ns per 8-byte put (paired median 0.92; 256 bytes 0.94); the
// progress call every 16 puts, made because ucx_perftest's loop makes
// it, adds about 7 % back (23.7, 12 rounds). put_lat calls PutShort
// directly instead of through put and retry.
//
//	chrt -r 1 ./perftest.test -test.run XXX -test.bench PutBWLoopCPU -test.benchtime 2000000x
//
// # Where an 8-byte tag message over shm spends its time
//
// tag_lat is am_lat plus what ucp adds: per one-way message the sender
// runs ucp's send path before the uct AM, and the receiver's ucp handler
// matches, copies and completes before the answer can be sent. Over shm
// the uct part is one AMShort into the peer's FIFO (claim a cell with a
// compare-and-swap, write it, publish it) and, on the receiver, one poll
// of its own FIFO. In one paired run at a load of about 1 on this 2-core
// host, ucx_perftest's 8-byte tag_lat was 46 ns above its am_lat (0.196
// against 0.150 µs one-way) and ours 95 ns above (0.261 against 0.166
// µs), so ucp is where the gap is:
//
//	go run ./bench/compare -t tag_lat,am_lat -x shm -s 8 -n 5000 -r 5
//
// The layers' shares come from a CPU profile of the 8-byte ping-pong
// between two workers of one process, which counts the sender's and the
// receiver's work of each message and none of the waiting, so a loaded
// host disturbs it less than a latency figure:
//
//	go test -c -o ucp.test ./ucp/
//	perf record -F 20000 -o tag.data ./ucp.test -test.run XXX -test.bench 'TagCPU$/none' -test.benchtime 2000000x
//	perf report -i tag.data --no-children --sort symbol
//
// with each function's own time added to its layer, and the shares
// applied to BenchmarkTagCPU's cpu-ns/roundtrip halved for one message
// (one eager send, which takes no request, and one receive request;
// the median of 11 runs of 300000 round trips). At 262 CPU-ns per
// message (load about 14):
//
//	layer                        ns  share  functions
//	uct send                     29  11 %   shm Endpoint.AMShort and check, ring.reserve
//	                                        and publish, release.Store
//	uct receive                  47  18 %   shm Iface.Progress and deliver, ring.ready, cell
//	                                        and release, Notifier.CompletedN
//	worker progress              24   9 %   Worker.Progress, progressIfaces
//	ucp header and protocol      39  15 %   tagSendNow, canSendNow, tagShort; boundEager
//	                                        (decode, endpoint, lane check), eagerArrive
//	matching                     31  12 %   ucp/internal/match (PostRecv, TakeRecv, findRecv,
//	                                        queueRecv, unlinkRecv)
//	request                      39  15 %   getReq, putReq, Release, TagSend, TagRecv
//	completion                   21   8 %   complete, deliverEager, memmove (the 8 bytes)
//	runtime, benchmark loop      31  12 %   the benchmark's own loop, kernel ticks
//
// What the receiving side leaves out, as UCX's does: the bound
// handler (boundEager) decodes a message, checks its lane, finds its
// endpoint and matches it under one callback lock; match.TakeRecv finds
// a posted receive before any unexpected-message record is taken; the
// iface's completion notifier counts deliveries with a plain store, not
// an atomic one (an XCHG on amd64, which waits for every store left
// buffered, such as the FIFO cell just handed back to the sender's
// core); and unlock, unlockCB, flushDrops and TagRecv's failure check
// are inlined in the common case. Against a build that looked the
// endpoint up twice, took a record per message and counted with XCHG
// (load about 14, alternated pairs), the header and protocol layer is
// 15 % of the profile instead of 20 %, BenchmarkTagCPU/none's CPU-ns
// per round trip is 0.94 of that build's (median of 11 pairs) and
// perftest's 8-byte and 256-byte tag_lat 0.93 and 0.92 (7 pairs each):
//
//	./ucp.test -test.run XXX -test.bench 'BenchmarkTagCPU$/none' -test.benchtime 300000x
//	perftest -l -t tag_lat -x shm -s 8 -n 20000 -w 1000 --json
//
// tag_lat's initiator posts the receive of the answer after its send,
// as ucx_perftest's ucp ping-pong does, so that posting overlaps
// the message's flight. With that too, in 7 alternated rounds of the
// older build, this one and ucx_perftest at a load of about 19, the
// median 8-byte tag_lat is 0.86 of the older build's (0.77 of UCX's in
// the host's slow state, against 0.86); in the fast state, where UCX's
// 8-byte tag_lat is about 0.17 µs, ours is about 0.27 µs (ratio about
// 1.55). What ucp adds to am_lat is about what UCX's adds in the slow
// state: at a load of about 17, 8-byte tag_lat was 130 ns above am_lat
// for ours (0.471 against 0.341 µs) and 120 ns for ucx_perftest (0.596
// against 0.476 µs), medians of 5 pairs of the compare command above.
//
// What ucp still pays that UCX does not: the check that a message came
// from its endpoint's bound source (ucgo drops a forged one; UCX trusts
// its peers), the notifier call of each delivering Progress (UCX has no
// per-delivery notification), the global posted-receive list
// beside the tag buckets (kept for failure handling in post order) and
// the Progress checks for failover, keepalive and callback work.
//
// An idle Progress, the step a waiting receiver repeats, costs 5 ns in
// shm and 14 ns through a worker (BenchmarkProgressIdle in both
// packages, best of 10 runs). The request layer is what UCX does not
// pay on its inline path: ucp_tag_send_nbx of a short message returns
// without a request. Ours does the same: TagSend (and AMSend, and a
// short Put) return a nil request when the message went inside the call
// and no callback or user data was asked for, so an eager send takes no
// request from the pool. In four alternated runs of 300000 round trips
// at a load of about 13, BenchmarkTagCPU/none went from 791-821 to
// 705-722 CPU-ns per round trip:
//
//	./ucp.test -test.run XXX -test.bench 'BenchmarkTagCPU$/none' -test.benchtime 300000x
//
// # Where an 8-byte tag_bw message spends its time
//
// The profiles and counts below are of a build whose Progress delivered
// up to 64 messages, handed each cell back before delivering the next,
// and whose AMShort did not prefetch; the last paragraphs of this
// section say what changed since.
//
// In tag_bw the receiver sets the rate. The sender's eager sends cost
// less than the receiver's delivery, matching and completion, so the
// sender's ring of 256 cells stays full (nearly every receiving Progress
// delivers its maximum of 64 messages), about one TagSend in four meets
// the full ring and takes a request, and the receiver hardly ever polls
// in vain (a few thousand empty polls per million messages). With 16
// receives posted and 64 messages per Progress, about 73 % of the
// messages arrive before their receive and are matched as unexpected;
// UCX's mm iface delivers at most 16 per progress call, so its
// receiver matches nearly all of them on posted receives.
//
// Profiles of the two processes of a 10M-message run, both at SCHED_RR
// priority 1 so that the host's other load does not cut into them, give
// the receiver's time per message (shares of its samples; ns at the
// 5.7 M messages/s of the alternated runs below, 175 ns per message):
//
//	timeout 60 chrt -r 1 perf record -e cpu-clock -F 20000 -g -o bw.data perftest -l -x shm -t tag_bw -s 8 -n 10000000 -w 100000 --json
//	perf report -i bw.data --no-children --pid <the server's pid> --sort symbol
//
//	layer                    share   ns  functions
//	uct receive               62 %  108  shm Iface.Progress and deliver; 93 % of deliver's
//	                                     samples wait for the next cell's sequence word, a
//	                                     line that the sender's core wrote
//	worker progress            6 %   11  Worker.Progress, progressIfaces
//	ucp header and protocol    6 %   11  boundEager, eagerArrive, decodeEager
//	matching                   7 %   12  ucp/internal/match (PostRecv, queueMsg, unlinkMsg,
//	                                     TakeRecv, findRecv)
//	request                    7 %   13  getReq, putReq, Release, TagRecv
//	completion                 5 %    9  complete, deliver, deliverEager, the copies
//	benchmark loop             5 %    9  push, pop, wait, poll, the time stamp
//
// ucx_perftest's receiver, profiled the same way, spends 63 % of its
// samples in libuct (its mm progress, the FIFO element's read first),
// 24 % in libucp and 11 % in its own loop: the same shape, with the
// transfer of the cell's line between the cores the largest part on
// both sides. The sender's samples pile up on the first store after a
// send (the next cell's line is still shared with the receiver's
// core). What made ours slower was the measurement's: a garbage
// collection marking through the measured phase (see the paragraph on
// the collector above). In 12 alternated rounds at SCHED_RR (load
// 16-18, the host's slow state), 8-byte tag_bw ran at a median 4.00 M
// messages/s before the collector was kept out of the phase, 5.73 M
// after it and 6.32 M for ucx_perftest (after/before 1.44, range
// 1.02-1.59; after/UCX 0.91, range 0.74-1.07). Handing cells back in
// batches of 32, as UCX's FIFO_RELEASE_FACTOR does, rings of 64 or 128
// cells, and a load of the next cell's sequence word before the handler
// runs changed the rate by no more than the rounds' spread.
//
// The sender's stall after each send is the line of the cell it just
// published: the next claim, a locked instruction, waits for that store,
// and the line is shared with the receiver's core, which read the cell's
// previous round. AMShort, the uct call of ucp's eager short tag, now
// prefetches for writing the cell four rounds on when the send follows
// another with nothing received in between and that cell's previous
// round has been handed back (transport/shm prefetch_linux.go), as
// AMBcopy already did for every send; Progress delivers at most 16
// messages, as UCX's mm iface, and hands the cells of one call back with
// one store at the start of the next, so that the counter's line, which
// a sender facing a full ring reads, moves once per call. In 12 rounds
// alternated with the build before (SCHED_RR, load 12-19, the host
// switching between its states within the rounds), 8-byte tag_bw ran at
// a median after/before of 1.09 (range 0.51-1.52; 14.4 to 15.5 M
// messages/s in the fast state, 7.4 to 8.4 M in the slow one), 256-byte
// tag_bw 1.14 (1.06-1.31), and 8-byte tag_lat, am_lat, 256-byte and
// 4-KiB am_bw stayed within 3 % (0.98, 1.01, 1.02, 1.00):
//
//	timeout 30 chrt -r 1 perftest -l -x shm -t tag_bw -s 8 -n 1000000 --json
//	timeout 30 chrt -r 1 perftest -l -x shm -t tag_lat -s 8 -n 200000 --json
//
// The prefetch alone, or the cap and batched hand-back alone, each
// changed 8-byte tag_bw by less than the rounds' spread in the slow
// state; together they gave 1.5 to 1.7 there (16 rounds, -n 300000).
// An AMShort that prefetched in every send cost am_lat 16 % and tag_lat
// 6-10 %; an AMBcopy gated like AMShort lost a tenth of am_bw 256 B. In
// paired runs against ucx_perftest (same priority, alternated, 10
// rounds of 1M messages in the slow state) 8-byte tag_bw is still 0.67
// of UCX's rate (range 0.62-0.76; ours 7.4-10.8 M, UCX 11.0-14.6 M); in
// the fast state ours ran at 15.0-15.7 M and ucx_perftest, run right
// after, at 14.7 and 15.1 M. The rate's gain comes with a longer tail:
// the sender now waits for cells in batches of up to 16, and tag_bw's
// 99th percentile time per send went from 0.12-0.41 to about 0.98 µs
// (3 alternated pairs, fast state), its median from 0.06 to 0.05 µs.
// With -n 200000 (bench/compare's runs) the overall rate is further
// below the median's than with 1M (8.3 against 25 M messages/s in one
// slow-state run), so compare's 8-byte tag_bw ratio to UCX reads low
// (0.62, five pairs) while its typical time per send is 0.80 of UCX's.
//
// The host's two states can be told apart by the round trip of one
// cache line between two threads pinned to the two CPUs: about 120 ns
// in the fast state, 500-600 ns in the slow one. In the slow state the
// transfers of the cells' lines set both tools' rates and ours is ahead
// (8-byte tag_bw 7.4 against 5.6 M messages/s, tag_lat 0.50 against
// 0.66 µs); in the fast state, where UCX's 8-byte tag_bw runs at 11-13
// M messages/s, the receiver's own work per message sets the rate. A
// profile of that state (perf record -e cpu-clock, 4M messages, the
// line's round trip about 120 ns around it) spreads the receiver's
// time over every layer with no step above an eighth of it: the shm
// poll and delivery, the bound handler, matching (TakeRecv, PostRecv),
// the request (TagRecv, getReq, Release, putReq) and perftest's window
// (push, pop, wait) about equally. Both sides run out of work at times:
// in one fast-state run of 2M messages the receiver found its ring
// empty in 73307 of 199701 polls and the sender sent 1.46M of the
// messages from its backlog, after meeting a full ring.
//
// An eager message that meets a posted receive now completes it inside
// the bound handler without a call of complete (a plain receive needs
// only its done mark; one with a callback, auto-release, a pending
// failure notice, or of a thread-safe worker still goes through
// complete), the handler decodes the header inline, and TakeRecv
// searches the tag's bucket itself when no wildcard receive is posted
// and returns at once when no receive is posted at all.
// BenchmarkTagStreamCPU/16 and BenchmarkTagCPU/none took 0.955 and
// 0.952 of the CPU time per message of the build before (medians of 10
// alternated pairs of 1M messages each); 8-byte tag_bw ran at 1.095 of
// the build before (10 alternated rounds of 1M messages at SCHED_RR,
// both states, range 0.89-1.78), and 8-byte tag_lat at 1.048 of its
// message rate (10 rounds of 200000 in the fast state, range
// 1.02-1.18; typical one-way 0.213 against 0.226 µs, UCX 0.194). Two
// changes that did not help were dropped: a window of requests in the
// tag loops whose index wraps without a 64-bit division (0.97 and 0.98
// of the rate, 6 and 8 rounds, both states), and a prefetch for
// reading of the cell four rounds ahead of the one Progress delivers
// (0.956, 6 rounds, fast state).
//
// Who waits for whom when the ring is full, from a build that counted,
// per 1M-message run, the receiver's polls and the sender's reads of
// the hand-back counter (ring.refresh) and refusals (empty polls counted
// only in runs of fewer than 1000 in a row: the barrier's polls before
// and after the phase are longer runs, and they made up most of the
// 73307 empty polls of the count above). In fast-state runs at 8.9-9.5 M
// messages/s the receiver delivered 16 messages in 63124 of its Progress
// calls and found its ring empty in 0 to 471: it never waits, and its
// work per message (105-112 ns) sets the rate. The sender met the full
// ring there: 184-217 thousand refreshes and 121-154 thousand refusals,
// nearly all of them retries of its backlog from Progress while its
// window of 16 waited, which took under 1 % of its samples in a profile
// of that state. The ring has 256 cells and the receiver holds at most
// 16 delivered ones back, so a full ring holds about 240 messages not
// yet delivered: the batched hand-back is not what fills it. In other
// runs, of either state (9.0-11.7 M), the receiver found its ring empty
// in 30-53 thousand polls and the sender was refused only 190-5500
// times: there the sender sets the rate. UCX's mm sender behaves as
// ours on a full ring (one read of the consumer's tail, NO_RESOURCE,
// the request on ucp's pending queue, dispatched from the iface's
// progress after another read of the tail). Runs of one build in one
// state land at either 8-10 or 12-16 M messages/s, ucx_perftest's at
// 12-13 or 15-16 M. Dropped, for the rate of 8-byte tag_bw (alternated
// rounds of 1M messages): a Progress that loads the sequence words of
// up to 16 cells before it delivers any (0.92 to 0.96 in the slow
// state, three series of 8 to 12 rounds; 1.04 and 1.09 in the fast
// one), the same only after a Progress that delivered 16 (0.99, 14
// rounds fast; 0.89, 6 rounds slow), a sender that prefetches for
// writing the cells a refresh finds handed back (0.98 and 1.00, 10 and
// 12 rounds), and rings of 64, 1024 and 4096 cells (0.94, 1.06, 1.08;
// the 64-cell ring never reached the higher of the two rates).
//
// perftest is built with profile-guided optimization: default.pgo in
// this directory, which go build and go test use for this main package
// (TestDefaultPGO checks both that and that the profile names the tag
// paths' functions), is the merged CPU profile of the ucp benchmarks of
// the two tag patterns:
//
//	go test -run XXX -bench 'BenchmarkTagStreamCPU/16$' -benchtime 5s -cpuprofile stream.pprof ./ucp/
//	go test -run XXX -bench 'BenchmarkTagCPU$/none$' -benchtime 5s -cpuprofile lat.pprof ./ucp/
//	go tool pprof -proto stream.pprof lat.pprof > bench/perftest/default.pgo
//
// With it the compiler inlines the hot chains whole, beyond its usual
// budget: shm's Progress with deliver and deliverCell, the bound eager
// handler with eagerArrive, TakeRecv and deliverEager, TagSend with
// tagSendNow, tagShort and AMShort with reserve and publish, TagRecv
// with getReq and PostRecv. Against the same source built without it,
// in alternated rounds at SCHED_RR: 8-byte tag_bw 1.157 of the rate (8
// rounds of 1M, fast state; 1.122 over 12 rounds of a profile of the
// stream benchmark alone), 8-byte tag_lat 1.059 of the rate (10 rounds
// of 200000, fast state; typical one-way 0.188 against 0.196 µs),
// 256-byte tag_bw 1.105 and 4-KiB tag_bw 1.039 (8 rounds each); 14
// more rounds of 8-byte tag_bw in the fast state gave 1.126 (range
// 1.04-1.27). Against ucx_perftest, alternated in the fast state (8
// rounds of 1M messages): 8-byte tag_bw at a median 9.8 M messages/s,
// 0.85 of UCX's 11.6 M (0.79 without the profile), and 8-byte tag_lat
// (6 rounds of 200000) typical one-way 0.180 µs against UCX's 0.169 (0.198
// without it). Profiles of perftest's own two processes (-cpuprofile,
// tag_bw and tag_lat) merged into these changed 8-byte tag_bw by 1.05
// and 1.01 (12 and 14 rounds) and tag_lat's rate by 0.97 and 0.95, and
// were left out.
//
// # Where a 1 MiB rc transfer spends its CPU
//
// Between two processes over lo (UCGO_PERFTEST_NO_NETNS=1), put_bw and
// tag_bw of 1 MiB are limited by the side that sends the data (the
// requester of put_bw's WRITEs; the responder of the READs with which
// ucp's rendezvous fetches a tag message): its core is busy the whole
// phase, three quarters of it in sendmmsg, while the receiver's copies,
// checks and ACKs take about half of its time and it polls an empty
// socket for the rest. CPU time per MiB moved, from
// perf record -e cpu-clock (1 kHz, kernel and user) of 2,100 MiB (-n
// 2000 -w 100), samples of the sending process from its start (ours
// calibrates its time-stamp counter then), ours in five runs and
// ucx_perftest over tcp on lo (zcopy) in two, in the same minutes:
//
//	sending process             ucgo      UCX tcp
//	all                      327-430      278-303   µs per MiB
//	kernel copy of the data   73-128       73-117   _copy_from_iter
//	ICRC of the payloads       50-65            -   foldAVX2
//
// The kernel's copy into the socket's buffers costs both the same per
// byte and moves with the host's state; what TCP does not pay is the
// ICRC, one more pass over every payload on each side. That pass runs
// at the carry-less multiply's throughput (about 23 GB/s on 4 KiB in
// cache, BenchmarkCRCUpdate4K in internal/roce), not at the memory's:
// it costs the same over a payload just copied into L2 as over the MR.
// Nor is it bound by the multiply's latency: a fold of eight 32-byte
// lanes per step instead of four ran no faster on 4 KiB (15-20 against
// 17-24 GB/s), and eight independent VPCLMULQDQ take about 6 ns on
// 32-byte registers as on 16-byte ones, so without AVX-512 more lanes
// do not help.
// The rest of the sender's time is the kernel's UDP send path (socket
// buffers, and the loopback's delivery into the peer's socket, which
// runs on the sender's core) and its polls for ACKs. On the receiving
// side the kernel's copy out of the socket and the fused copy and ICRC
// check into place (internal/roce CopyCheck) take 90-104 µs per MiB
// against the 54-58 µs of TCP's one copy, which does not limit the rate.
//
//	UCGO_PERFTEST_NO_NETNS=1 perf record -e cpu-clock -F 1000 -- chrt -r 1 perftest -l -x rc -t put_bw -s 1m -n 2000 -w 100
//
// With failover on (UCGO_FAILOVER=same or any) and no fault, every
// message also travels in ucp's sequenced channel. The sender writes the
// sequence header, the eager header and the payload straight into its
// replay log's next cell (cells keep their buffers across
// acknowledgements) and posts that cell; the receiver's bound handler of
// sequenced messages (boundSeq) checks the lane, numbers the message,
// counts it on its lane (a counter for the probes; the clock is read on
// one message in 16 and at probe rounds, for a failover event's Detect),
// notes the acknowledgement it carries (the sender's log takes it every
// 16 messages, or at once when it covers the whole log) and matches it,
// under one lock and one lookup of the endpoint, whatever lanes the
// endpoint has. The bound handlers are kept out of line (go:noinline):
// the copy of a closure that inlining its maker makes is compiled
// without inlining what it calls, which cost BenchmarkTagCPU 12-18 % of
// its CPU time per round trip (figures below). Paired profiles of BenchmarkTagCPU
// (2,000,000 round trips each, off then any, load about 10) put what the
// channel adds at about 14 CPU-ns per message (400 against 372 CPU-ns
// per round trip):
//
//	UCGO_FAILOVER=off perf record -F 20000 -o off.data ./ucp.test -test.run XXX -test.bench '^BenchmarkTagCPU$/^peer$' -test.benchtime 2000000x
//	UCGO_FAILOVER=any perf record -F 20000 -o any.data ./ucp.test -test.run XXX -test.bench '^BenchmarkTagCPU$/^peer$' -test.benchtime 2000000x
//
//	part                          ns  functions
//	send path                   +6.5  seqTag (headers, payload copy into the
//	                                  cell, Commit, TakeAck) against tagShort
//	receive path                +4.9  boundSeq (lane, number, counter, ack)
//	                                  against boundEager and decodeEager
//	clock                       +1.5  the time-stamp counter read of one
//	                                  message in 16
//	uct                         +1-4  shm AMShort and deliver of the 13 more
//	                                  bytes (within the profiles' noise)
//
// Between two processes, BenchmarkTagLatencyFailover gives each process
// a worker with failover off and one with it on and takes turns between
// the two pairs in blocks of 200 round trips; its figures are medians
// over the blocks, so a load that comes and goes weighs on both pairs
// and a preempted block drops out. Alternating a build without the
// bound sequenced handler and the out-of-line bound handlers (before)
// with this one (after), the median on/off of the 8-byte one-way
// latency was, with failover any and same:
//
//	host state                       pairs (any, same)  any before  after  same before  after
//	one-way about 0.2 µs, quiet spell        6, 6             1.27   1.08         1.15   1.06
//	one-way about 0.5 µs, load 11-24        24, 16            1.14   1.05         1.10   1.04
//
//	./ucp.test -test.run XXX -test.bench 'BenchmarkTagLatencyFailover/any$' -test.benchtime 40000x
//
// The off path's CPU time fell as well, once boundEager was kept out of
// line (BenchmarkTagCPU/peer with failover off, 3 alternated pairs of
// 300000 round trips at a load of about 7: 635, 432 and 472 CPU-ns per
// round trip before, 556, 361 and 386 after).
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
//
// # The kernel's floor for 1 MiB over lo and veth
//
// How close rc's 1 MiB bandwidth can come to UCX's tcp is bounded by
// what the kernel alone charges for each way of moving the bytes.
// BenchmarkFloorRatio in transport/rc/verbs moves data from the test
// process to a re-executed child (each pinned to a CPU with GOMAXPROCS
// 1, as perftest -l and compare's ucx_perftest are) with nothing in user
// space but the system calls: tcp (1 MiB writes, TCP_NODELAY, the
// receiver reading into 1 MiB), udp (GSO datagrams of 15 packets of a
// BTH, 4096 bytes and an ICRC field, built once, about 512 KiB per
// sendmmsg; GRO and the transport's rxBatch on receive), udpref (the
// transport's txBatch, each payload sent by reference from a 1 MiB
// buffer) and icrc (udpref with the ICRC computed on send and checked
// with roce.CopyCheck while the payload is copied to its place). The UDP
// flows keep rc's largest window (512 packets) outstanding; 2048 ran no
// faster, and no packet was lost. The flows take turns of 256 MiB within
// one run, and each turn's rate is set against tcp's of the same turn, so
// that the host's changes of speed cancel. Medians over the turns of each
// run, then over 8 alternated runs at SCHED_RR 1 (run against run: the
// median of those medians and their range; MB/s of 10^6 bytes here; 18
// more runs with turns of 64 MiB gave 0.88, 0.84 and 0.70 over lo):
//
//	       tcp MB/s (fast/slow)  udp/tcp          udpref/tcp       icrc/tcp
//	lo     5700 / 2100           0.83 (0.73-0.87)  0.76 (0.69-0.83)  0.70 (0.63-0.77)
//	veth   4800 / 2200           0.87 (0.78-1.41)  0.86 (0.76-1.25)  0.77 (0.64-1.11)
//
//	go test -c -o verbs.test ./transport/rc/verbs
//	chrt -r 1 ./verbs.test -test.run '^$' -test.bench 'FloorRatio/lo$' -test.benchtime 4096x
//
// Over lo, GSO and GRO datagrams of RoCE packets cost the kernel more
// per byte than TCP's stream, about 0.85 of its rate with no user-space
// work at all; sending each payload from where it lies, in an iovec of
// its own, costs a few per cent more; the ICRC's two passes take the rate
// to 0.70 of TCP's. Run on their own for 2000 MiB each (BenchmarkFloor,
// one run per flow, then ucx_perftest's 1 MiB put_bw, 13 rounds) the
// flows gave lower ratios in the host's fast state (tcp 5600-6300 MB/s:
// udp/tcp 0.72, icrc/tcp 0.56, 7 rounds) and about the turns' ones in its
// slow state (0.81 and 0.73, 6 rounds).
//
// Against UCX the bound depends on the host's state, because UCX's tcp
// put_bw is not always raw TCP's rate. In the fast state it is about that
// (0.91 of the tcp flow in the rounds above) and the icrc flow moved a
// median 0.65 of ucx_perftest's 1 MiB put_bw (11 rounds with turns of
// the ratio benchmark, 0.55-0.80; 0.64 in the 7 rounds of single runs):
// there no RoCEv2-over-UDP sender that computes the ICRC in software
// reaches UCX's tcp over lo on this host, and the upper bound of ucgo's
// 1 MiB put_bw and tag_bw against it is about 0.65-0.7 (about 0.8 were
// the ICRC free). In the slow state UCX's tcp ran at 0.72-0.90 of the tcp
// flow and the icrc flow at 0.85-1.0 of UCX. perftest's 1 MiB put_bw,
// run in the same rounds, moved a median 0.84 of the icrc flow's rate in
// the fast state (0.72-1.00, 11 rounds) and 0.94 in the slow one (3
// rounds): 0.57 of ucx_perftest's put_bw in the fast state, 0.80-0.95 in
// the slow one, so about a sixth is left between rc and the floor of
// its own data path:
//
//	UCGO_PERFTEST_NO_NETNS=1 chrt -r 1 perftest -l -x rc -t put_bw -s 1m -n 2000 --json
//
// # rc over lo against UCX's tcp: system calls per message
//
// Counted with strace -c -f over both processes of a run (22000 round
// trips of tag_lat, 110000 messages of tag_bw, warm-up included), on lo
// (UCGO_PERFTEST_NO_NETNS=1) and for ucx_perftest with UCX_TLS=tcp,
// UCX_NET_DEVICES=lo, per message:
//
//	                  ucgo rc                               UCX tcp
//	tag_lat 8 B       1.0 sendmmsg (2 datagrams)            0.96 sendto
//	                  1.87 receives with data, 1.57 empty   0.96 recvfrom, 3.3 epoll_wait
//	tag_bw 8 B        0.04 send calls (GSO batches)         0.95 sendto
//	                  0.05 receives with data               0.48 recvfrom, 0.52 epoll_wait
//	tag_bw 4 KiB      0.09 send calls                       0.95 sendmsg
//	                  0.11 receives with data               0.51 recvfrom, 0.58 epoll_wait
//
//	UCGO_PERFTEST_NO_NETNS=1 strace -f -c perftest -l -x rc -t tag_lat -s 8 -n 20000 -w 2000 --json
//
// In a ping-pong each message is a datagram and so is its ACK: the two
// directions of a pair of ucp endpoints use two QP pairs, so the
// deferred ACK of a request goes to another QP of the peer than the
// reply it rides behind, and the peer takes it with a receive of its
// own once it has answered. Off the critical path: the reply reaches
// the peer's socket before the kernel starts on the ACK (lo delivers
// inside the send call), and the ACK is taken while the peer works.
// Sending the ACK as the last segment of the reply's GSO datagram (the
// two QPs share the reuseport steering byte, so it would reach the
// same socket) made it one datagram and one receive per message, but
// put the ACK's handling before the reply's completion on the
// receiver: 8-byte tag_lat got slower (after/before 1.09, 8 alternated
// rounds), so it is not done. Leaving out 15 ACKs in 16 gained about 4
// % on 8-byte tag_lat (3 of 4 pairs) and nothing on 4 KiB. In a perf profile
// (perf record -e cpu-clock -g) of 8-byte tag_lat the sending
// sendmmsg, which runs the peer's receive path on lo, holds about two
// thirds of a one-way time, and the Go code of the path (packet
// handling, completion, ucp, the send) about a fifth. At 4 and 8 KiB
// ours passes over the payload three more times than UCX's tcp (the
// ICRC on both sides, the copy into the SRQ's receive buffer), and the
// SRQ's 512 receive buffers (4 MiB) are taken in the order posted, so a
// message lands in a buffer no cache holds; taking the most recently
// posted one first gained about 5 % on 8 KiB tag_lat (4 pairs) and is
// not done, since it changes the SRQ's order. An 8 KiB ucp message (8
// KiB and its headers) used to be above the size PostSend copies into
// the transmit batch: it left by reference, with a send call of its
// own, and on lo the kernel's copy of such a send, from an iovec per
// header, payload and trailer, was slow: in perf profiles of 8 KiB
// tag_lat the senders' _copy_from_iter took 15 times the samples of
// the receivers' _copy_to_iter, and 2.6 times once the packets were
// copied into the batch (perf record -e cpu-clock, both processes).
// Batched since (see verbs' postCopyMax), 8 KiB tag_bw runs 1.36 times
// as fast and 8 KiB tag_lat takes 0.84 of the time. Messages up to 64
// KiB and 64 bytes are batched the same way now: put_bw over lo against
// UCX's tcp (compare -rt -x rc-lo -t put_bw -s 16k,32k,64k -n 4000 -r 5,
// median of five alternated runs' paired ratios) went from 0.79 to 0.88
// at 16 KiB, 0.75 to 0.94 at 32 KiB and 0.87 to 1.07 at 64 KiB, and
// put_lat and tag_lat at those sizes did not change. A uct AM leaves in
// one GSO datagram at any length: rc carries its id in a 1-byte header
// in front of the message, not in an immediate, which would ride in the
// last packet and, for an AM of whole MTUs (8 or 16 KiB), make it 4
// bytes longer than the others and so a datagram of its own (a GSO
// message's segments may only shrink). Header against immediate,
// alternated over lo (perftest -l -x rc at real-time priority, two
// series of 8 and 10 rounds, medians of the per-round ratios), am_lat
// took 0.83 and 0.86 of the time at 8 KiB and 0.95 and 0.96 at 16 KiB,
// am_bw ran 1.04 times as fast at 8 KiB and 1.42-1.46 at 16 KiB, and
// 8-byte am_lat, am_bw and tag_lat did not change (0.97-1.03). Against
// UCX's tcp (compare -rt -x rc-lo -t am_lat,am_bw -s 8,8k,16k -n 10000
// -r 5, four runs of each alternated) 8 KiB am_lat went from 1.48 to
// 1.23 times UCX's and 16 KiB am_bw from 0.72 to 1.02 of UCX's rate;
// 16 KiB am_lat stayed at 1.38. In bandwidth tests the transmit batch and
// GSO cut the system calls per message tenfold and more against UCX's
// one send and one receive per message: 8-byte tag_bw runs at several
// times UCX's rate, 4 and 8 KiB at about UCX's, where copying and the
// ICRC, not the calls, take the time.
//
// Of an 8-byte tag_lat one-way time over lo (4.6-5.7 µs at real-time
// priority on a two-CPU VM), the Go code from the request's arrival to
// the reply's send call takes about 0.9 µs (clock reads around the
// steps, median of 40000 messages): 150 ns to handle the packet, 300-400
// ns through the completion, ucp and the application to the reply's
// PostSend, 180 ns in PostSend (the WQE, the packet and its ICRC), 60 ns
// to the next pass and 70 ns to build the deferred ACK behind the reply.
// The rest is the kernel: a bare UDP ping-pong between two processes
// (non-blocking recvmsg polls, one sendto per message) took 3.3-4.2 µs
// one-way, and 3.9-4.6 µs with a second datagram per message standing
// for the ACK; an empty recvmsg costs about 480 ns, an empty recvfrom 370
// ns, a system call that does nothing 200 ns. UCX's tcp makes, per
// message, one sendto, one recvfrom and about 3.2 epoll_wait (strace -c,
// 20000 round trips). A poll loop that never yields was preempted by the
// runtime every 10 ms, each time followed by a millisecond of the
// runtime's monitor thread waking every 20 µs on the process's CPU; the
// engine now yields once a millisecond (verbs' yieldEvery): 8-byte
// tag_lat took 0.91-0.98 of the time (medians of three series of 8-10
// alternated rounds at normal priority), am_lat 8 bytes and tag_lat 4
// KiB did not change (1.00), nor did anything at real-time priority.
//
// # rc tag messages of 4 to 64 KiB over lo
//
// A tag message above one eager fragment (then 8 KiB and 64 bytes on rc)
// took the rendezvous: the RTS, the receiver's READ request, the READ's
// responses, then the ATS off the critical path, three one-way trips
// where an eager send takes one. Between two processes over lo each
// trip costs a send call, the peer's receive and a pass of its engine,
// so 16 KiB tag_lat took about four times the time of 8 KiB. Tag
// messages up to 16 KiB now go eager in fragments on rc lanes (ucp's
// tag_frag.go). Each fragment is a message of its own (a GSO datagram,
// a completion, a copy into the SRQ's buffer and one out of it), and
// the responder used to ACK each fragment taken in a pass of its own:
// one ACK datagram per fragment (strace -c: 1.6 ACK-only sendmsg per
// 64 KiB message sent in 8 fragments, 0.01 once a deferred ACK is held
// while each pass finds more requests; see verbs' releaseAcks). Even
// so, the fragments win only while they are few: alternated with the
// rendezvous (after/before of medians, 4-6 rounds a series),
//
//	size     tag_lat eager   tag_bw eager
//	16 KiB   0.47-0.56       1.12-1.26
//	32 KiB   0.61-0.88       0.73, 0.82 (1.01 in 4 rounds)
//	64 KiB   0.97 (4)        0.55 (4)
//
// so 32 and 64 KiB kept to the rendezvous, whose GET moves the data in
// one READ from where it lies. 4 and 8 KiB (one eager fragment) were
// unchanged (1.02 and 1.01, 8 rounds). Fragments cut at the full bcopy
// size left in a datagram each (a fragment's short last packet ends
// the GSO datagram before the next one's first); cut to whole
// packets (ucp's fragAlign, uct.IfaceAttr.AMBcopyAlign) one message's
// fragments leave in one GSO datagram, and 16 KiB tag_lat took 0.86 of
// the time (median of eight alternated rounds at real-time priority,
// 0.76-1.22; six rounds at normal priority: 0.78-0.93),
// while against the rendezvous
//
//	size     tag_lat eager   tag_bw eager
//	32 KiB   0.55-0.82 (6)   1.06-1.47 (8)
//	64 KiB   0.84-0.98 (6)   0.72-1.19 (6)
//
// so tag messages up to 32 KiB go eager in fragments, 64 KiB keeps to
// the rendezvous.
//
//	UCGO_PERFTEST_NO_NETNS=1 chrt -r 1 perftest -l -x rc -t tag_lat -s 16384 -n 5000 -w 500 --json
//
// # rc tag latency from 8 to 16 KiB over lo
//
// With 8 KiB fragments, one-way tag_lat over lo grew about 2 µs from 4
// to 8 KiB and 6-11 µs from 8 to 16 KiB, where UCX's tcp grows about 2
// µs. The system calls do not explain it: per message both sizes make
// one send call (the message as one GSO datagram and the deferred ACK
// of the peer's message behind it) and two receives with data (the
// device on lo has UDP GRO, so the GSO datagram arrives whole in one
// 64 KiB buffer, never truncated; then the ACK), and a TagSend completes
// once its fragments are in the transmit batch, never on the ACK, so
// neither perftest's loop nor ucx_perftest's waits a round trip for it.
// The kernel's part is small too: a two-process UDP ping-pong over lo
// with the same GSO segments and UDP_GRO took 1.7 µs more at 16 KiB
// than at 8 KiB. The time is in user space, from a message's arrival
// to the reply's send call (clock reads around the engine's receive,
// its posts and its send call: about 7.5 µs at 8 KiB, 14.5 µs at 16
// KiB, the send call itself the same), and it has two parts:
//
//   - the fragments: a message one fragment longer took about 3 µs more
//     (tag_lat at 8192 and 8300 bytes, medians of six rounds: 10.2 and
//     13.1 µs), since each fragment is a message of its own on both
//     sides (an AMBcopy and a PostSend, a completion, an AM callback and
//     a placement), and 16 KiB went in three (two of two packets, one
//     of its last 80 bytes);
//   - the bytes: about 0.5 µs per KiB on the whole, seven passes over
//     the payload (the copy into the bounce buffer, the ICRC fused with
//     the copy into the transmit batch, the kernel's copies in and out,
//     the ICRC check, the copy into the SRQ's buffer and the one into
//     the receive's), where UCX's tcp makes about four.
//
// rc's bounce and receive buffers now hold 16 KiB and 64 bytes, so a 16
// KiB tag message is one eager message: 16 KiB tag_lat took 0.84 of the
// time (median of eight alternated rounds at real-time priority,
// 0.73-1.04), 32 KiB 0.92, 4 and 8 KiB 1.01 and 1.02; 16 KiB tag_bw
// ran 1.18 times as fast (six rounds, 1.08-1.25). The fragment step
// now sits above 16 KiB and 64 bytes (medians of six rounds: 20.1 µs at
// 16384 bytes, 22.8 µs at 16500). Placing SEND middles and lasts in the
// pass that checks their ICRC, one pass less on the receiver, gained
// nothing measurable at 4-16 KiB (eight rounds) and is not done.
//
//	UCGO_PERFTEST_NO_NETNS=1 chrt -r 1 perftest -l -x rc -t tag_lat -s 8192,8300,16384,16500 -n 5000 -w 500
//
// # Unexpected tag messages in tag_bw
//
// A tag message that arrives before its receive is posted is copied
// twice (into ucp's unexpected storage, then into the receive's buffer),
// and an unexpected message in fragments three times (into the assembly
// buffer first); one that meets a posted receive is copied once. In
// tag_bw few take the longer paths. Counted by a build with counters,
// per run at SCHED_RR priority 1 (rc over lo, -w 500): 92 of 50500
// 16 KiB messages were unexpected, and 68 of 50500 32 KiB messages were
// assembled (50432 were placed, tag_frag_place.go); in runs of 5500
// messages, whose start is a larger share, 269-298 and 30-31; at normal
// priority under load up to 13 % and 2 %. Over shm, 0 to 5 of 1001000
// 4 KiB messages. Nor does the second copy set the rate: over rc the
// receiver's receive calls found nothing in 78 % (the host's fast state)
// to 89 % (its slow one) of its polls, and the sender is the busy side.
// A 16 KiB message with its 12-byte header is five packets, the fifth
// short, so each message is a GSO datagram of its own (20808 datagrams
// for 20500 messages, 23 to a sendmmsg), and in a profile of the sending
// process (perf record -e cpu-clock, 200000 messages) 71 % of its
// samples are the kernel's, 66 % in sendmmsg and 28 % the kernel's copy
// from the transmit batch (_copy_from_iter); its own copies, into the
// bounce buffer and, with the ICRC, into the batch, take 7 % each.
// ucx_perftest's tcp sender spends 97 % in the kernel, 44 % in the same
// copy. Medians of six rounds of 16 KiB tag_bw alternated with this
// build: a build that left the payload out of the bounce buffer (wrong
// data, only to bound the copy's share) ran 1.03 times as fast; payloads
// sent by reference from the bounce buffer 0.97; transmit pieces of 128
// or 256 KiB instead of 512 0.98 and 0.95; 256 AM credits instead of 128
// 0.94.
//
//	UCGO_PERFTEST_NO_NETNS=1 chrt -r 1 perftest -l -x rc -t tag_bw -s 16k,32k -n 50000 -w 500 --json
package main
