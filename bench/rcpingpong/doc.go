// Command rcpingpong is an ibv_rc_pingpong-compatible tool for ucgo's rc
// transport: same flags, same TCP exchange of "LID:QPN:PSN:GID" (see
// internal/oobexch), same strict SEND ping-pong and summary lines, so it can
// be run against rdma-core's ibv_rc_pingpong on soft-RoCE or a real HCA.
//
// Usage, as ibv_rc_pingpong:
//
//	rcpingpong [options]            # server
//	rcpingpong [options] SERVER     # client
//
// Besides rdma-core's flags, -a chooses the local IP address (the GID and
// the RoCEv2 source address), and -w how long a client retries a refused
// TCP connection. -T sets the local ACK timeout exponent of our QP
// (rc_pingpong's fixed 14, 67 ms, by default; the interop tests use 18,
// 1.07 s, since a VM under TCG on a loaded machine can be slower than
// that). -x stops after the TCP exchange (advertising a QPN of
// -q and a random PSN): it checks the exchange against a real peer where no
// queue pair is available.
//
// The data path is transport/rc/verbs, ucgo's user-space RoCEv2
// provider, set up as rc_pingpong.c does it: one buffer of -s bytes
// (0x7b), registered for local write only; a CQ of -r + 1 entries (with a
// completion channel under -e); an RC QP with one send WR and -r receive
// WRs, INIT with no remote access, RTR with path MTU -m, min RNR timer 12
// and one incoming READ/atomic, RTS with timeout -T (14), retry_cnt 7,
// rnr_retry 7; -r receives posted before the exchange, the server moving
// to RTS before it answers. The client sends first; each side posts its
// next SEND once its last SEND and a receive completed; both print
// rc_pingpong's two summary lines. -d names the netdev (default: the one
// holding -a) and -i must be 1. The device has one GID, index 0 (the
// IPv4-mapped -a address): -g 0 advertises it, no -g advertises zeros as
// rc_pingpong does, which no RoCE peer can use, so run both sides with
// -g. Without -e the tool polls, but after 200 empty polls it sleeps in
// the socket until a packet or timer is due (the machine is shared).
// The device must get UDP port 4791 on its address (shared with other
// ucgo processes as root, see verbs.Config.Port): RoCEv2 peers send there.
//
// # Tests
//
// TestPingpongNetns runs the tool against itself between two network
// namespaces (internal/netns) with rc_pingpong's defaults, -s 1,
// -s 65536, -m 4096 -c and -e: a fast check of the data path that needs
// no VM.
//
// TestInteropRXE boots the rxe-vm harness (../shared/tools/rxe-vm from the
// repository root, found by walking up) and runs the interop cases against
// the kernel's rdma_rxe and rdma-core's unmodified tools in the VM,
// several cases per boot (a boot costs 7-10 s under TCG, more on a loaded
// machine): each case has a VM side and a host side that run in order on
// both sides and meet over TCP (distinct ports per case) and RoCE. The
// console log and the host outputs are kept in separate files, so the
// two sides' lines never interleave. It needs root; it skips with a
// message when the harness or root is missing. RXEVM_CACHE names the
// writable folder for the VM image (built there by build.sh when missing;
// default: $XDG_CACHE_HOME/ucgo-rxevm).
//
// Cases that need an rdma-core QP under remote control use
// testdata/rxepeer.c, built at test time with gcc against libibverbs
// (package libibverbs-dev; the host is Debian 12 like the VM image, so the
// dynamically linked binary runs there) and shipped into the VM with
// run.sh -f. Without gcc or the headers those cases are not run (logged).
// The rxepeer-loopback case connects two rxepeer QPs inside the VM through
// a host-side driver and runs the one-sided suite (WRITE, READ, both
// atomics, SEND with and without immediate, every byte checked) between
// them: it proves the suite and the helper before they judge our side.
//
// The cases run in two boots with a link MTU of 9000 (so that -m 4096
// fits): the main one, then one for the two -n 10000 runs, which gets
// what the test's deadline (go test -timeout) leaves of its 480 s, so
// that a hung long run costs no other case its result. UCGO_RXE_CASES, a
// regular expression, runs only the cases whose names match;
// UCGO_RXE_SHORT=1 leaves the long boot out. The cases against our
// verbs:
//
//   - pp-vm-server*, pp-vm-client*: ibv_rc_pingpong in the VM against this
//     tool (with -T 18), each role, with the defaults, -s 1, -s 65536
//     -n 100, -m 4096, -e on our side, and -n 10000 (the long boot); both
//     print the summary and exit 0.
//   - ours-rxepeer: a test-binary role drives one of our QPs (ourPeer,
//     set up as rxepeer.c sets up its own) and rxepeer QPs in the VM: the
//     one-sided suite ours-to-rxe and rxe-to-ours; a WRITE with a wrong
//     rkey from each side (the issuer gets remote access error, the
//     responder's QP is in ERR); a SEND to a QP with no receive posted
//     from each side with rnr_retry 2 (three RNR NAKs, then RNR retry
//     exceeded on the sender).
//   - ours-poweroff (last: the VM is gone after it): 4 MiB of WRITEs from
//     us, the VM powers off under them; the first completes with retry
//     exceeded (timeout 14, retry_cnt 3), the rest are flushed. The time
//     from the power-off command's answer to that completion is printed
//     beside the bound timeout × (retry_cnt+1), not asserted (tests hold
//     no timed assertions).
//
// # rxe quirks met so far
//
//   - retry_cnt 7 means "retry forever" in rxe (the IB spec gives the
//     infinite meaning only to rnr_retry): a VM tool whose peer vanished
//     never fails, so every VM-side tool runs under timeout.
//   - rxe accepts an RC packet only if its IP source is the address in
//     the QP's remote GID.
//   - A rc_pingpong server accepts exactly one TCP connection: never probe
//     its port.
//   - run.sh exits 2 when its logs/ folder is empty (set -e with a
//     failing ls in a pipeline): the test leaves a placeholder file there.
//   - rxe checks the ICRC over the real IPv4 header, IP ID included. A
//     Linux UDP socket sending with UDP_SEGMENT (GSO) numbers the
//     segments' IP IDs 0, 1, 2, ...: each segment needs the ICRC of its
//     own ID, or rxe drops every segment but the first without a word
//     (transport/rc/verbs computed them all for ID 0 until this was
//     found; the requester then crept forward one packet per ACK timeout).
//   - rxe's IB QPNs count up from 0x11 per QP created since the module
//     was loaded; ours carry the port-sharing slot in bits 16-23 (0x10011).
//   - A responder-side remote access error (a WRITE with a wrong rkey)
//     moves rxe's QP to ERR but posts no async event to the process that
//     owns it (ibv_get_async_event finds none); the requester gets
//     IBV_WC_REM_ACCESS_ERR.
//   - A VM under TCG on a loaded machine answers late: ACKs took longer
//     than rc_pingpong's 67 ms local ACK timeout, and a peer with
//     retry_cnt 7 (finite for us) gave up; the tests run our side with a
//     timeout of 18 (1.07 s).
//   - rxe's retransmission timer fires early in the VM (a packet going out
//     arms it only if it is not pending yet, so a timer left from an earlier
//     message can fire just after a new one starts; jiffies jump under TCG):
//     rxe resends whole SENDs we have already ACKed, sometimes as their last
//     packet leaves. rxe's completer (Linux 6.1, rxe_comp.c) then mishandles
//     our ACKs: the first ACK of the SEND's last PSN, arriving while the
//     requester resends it (WQE state "processing", not "pending"), only
//     moves comp.psn past the SEND; a second ACK of that PSN, now below
//     comp.psn, completes the WQE (check_psn: "most likely a retried
//     packet") although the requester is still resending it. rc_pingpong,
//     having its receive too, posts its next SEND; with one send WR the ring
//     has two slots, the producer index comes round to the requester's WQE
//     index, and req_next_wqe takes the queue for empty: the requester stops
//     in the middle of the old SEND and never sends the new one, and the
//     completer, whose head WQE is "posted", never retries. Seen with -s
//     65536 and the VM as client, 2-3 in 20-40 runs under load (none in 60
//     since the change below, with rxe retrying 450-540 times in each 30):
//     the capture shows the resent SEND stopping short of its last packet
//     after our re-ACKs of its last PSN, and `rdma res show qp` the VM's
//     sq-psn stuck inside it, with rdma_sends = rdma_recvs. We used to
//     re-ACK every duplicate packet with the latest PSN, which supplied the
//     second ACK; transport/rc/verbs now re-ACKs only duplicates that ask
//     for an ACK (the resent SEND's last packet, sent after the requester is
//     done with it), with their own PSN (the latest only while a message is
//     arriving: a PSN that ends no message). rxe itself is unchanged: had
//     that one re-ACK been lost, it would stall still (comp.psn is past the
//     SEND, so it neither re-arms its timer nor retries).
//     UCGO_RXE_PCAP=FILE captures a TestInteropRXE boot's link.
//   - rnr_retry below 7 is counted as the IB spec says, unlike retry_cnt
//     7: an rxe sender with rnr_retry 2 draws three RNR NAKs from us, then
//     completes with RNR retry exceeded; as responder without a receive
//     posted rxe answers each try with an RNR NAK.
package main
