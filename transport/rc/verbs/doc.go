// Package verbs is the verbs model of the rc transport and its software
// RoCEv2 provider: InfiniBand verbs semantics (protection domains, memory
// regions, completion queues with completion channels, reliable-connected
// queue pairs with the IB state machine, shared receive queues, async
// events) over RoCEv2 packets (UDP port 4791, BTH/RETH/AETH/AtomicETH/
// ImmDt, ICRC) sent and received from user space on an ordinary UDP
// socket, so it runs on any IPv4 network and a packet capture decodes as
// RoCEv2. Names follow ibverbs: Open ≈ ibv_open_device, AllocPD, RegMR,
// CreateCQ, NewCompChannel, CreateQP, QP.Modify ≈ ibv_modify_qp,
// PostSend, PostRecv, CQ.Poll ≈ ibv_poll_cq, Events ≈ ibv_get_async_event.
//
// # Ownership
//
// A Device owns one non-blocking UDP socket bound to its address (port
// 4791 unless configured), a netlink socket watching its netdev's link
// state, an async event queue (uct.EventQueue), and every PD, MR, CQ, QP
// and SRQ made from it; Device.Close moves every QP to ERR, stops the
// background goroutines and closes the sockets. An MR keeps the byte slice
// it registered referenced; remote addresses are virtual addresses inside
// it (MR.Addr() + offset). QP numbers are unique per device.
//
// # Sharing port 4791
//
// Peers such as the Linux kernel's rdma_rxe send every packet to UDP port
// 4791, so every process on a host wants that port. A device on 4791 joins
// the host's group of sockets sharing it (internal/reuseport): an
// SK_REUSEPORT eBPF program steers each datagram by the top byte of its
// BTH destination QPN to the socket of the process that claimed that byte,
// and the device hands out only QPNs with its byte (Device.QPNRange), so
// QP numbers are unique across the processes of the group. The device
// holds its member of the group (slot and socket) until Close; a process
// that dies frees its slot. Where eBPF is not permitted (not root, no
// bpffs), all 255 slots are taken or a process holds 4791 without sharing
// it, the device binds 4791 alone if it is free and a port the kernel
// picks otherwise (Device.SharedPort says which and why); a peer must
// then be told that port (AHAttr.DPort), which the rc transport carries in
// its iface address.
//
// # Progress model
//
// There is no goroutine on the data path. One mutex per device (the
// engine mutex) guards all of its state. The engine runs when the user
// calls Device.Progress, CQ.Poll (which runs Progress before returning
// completions) or CompChannel.GetCQEvent (which runs it while it waits):
// it receives from the socket (with UDP GRO on a socket it does not
// share, so that a peer's GSO message arrives as one datagram, which it
// cuts back into packets): one datagram per pass with recvmsg while
// packets come one at a time, as in a ping-pong, and, once three polls
// in a row have found data, in batches of recvmmsg until a batch finds
// at most one (rxsingle_linux.go); a pass may thus leave datagrams
// waiting, which the next pass or a wait on the socket sees. The middles
// of a long WRITE or READ response with the expected PSN are copied to
// their place in the pass that checks their ICRC (rxplace.go). It runs
// the responder
// (SEND/WRITE/READ/atomic execution, ACK coalescing, NAKs, duplicate
// detection and replay of READs and atomics from responder resources; a
// duplicate SEND or WRITE packet is ACKed again only if it asks for an
// ACK, with its own PSN, or the latest while a message is arriving)
// and the completer (ACKs, NAKs, READ responses, go-back-N
// retransmission), fires due timers (local ACK timeout, RNR waits;
// checked against a monotonic clock on every pass) and sends whatever
// became ready with sendmmsg (sendmsg for a batch of one message),
// using UDP GSO for runs of equal-size packets to one peer. A packet's payload of 1 KiB or more that lies in
// registered memory (or a WR's inline copy) is not copied: the message's
// iovecs alternate headers and trailers in the batch with payloads where
// they lie. A long transfer leaves in pieces of 512 KiB, each ending where
// a GSO datagram does, so that the peer receives the first while the rest
// is built.
//
// PostSend copies the packets of messages up to 64 KiB and 64 bytes (a
// 64 KiB payload with an upper layer's headers) into the transmit
// batch and returns (a larger message leaves from where it lies before
// PostSend returns, so the caller may reuse its memory at once either
// way); the batch goes out (the doorbell rings) at the start of the next
// engine pass (Progress, CQ.Poll, GetCQEvent), when it fills, when an
// owner arms a CQ (ReqNotify) or says it sleeps (Sleep), before a QP
// changes state or is destroyed, and at the latest when the background
// goroutine runs the engine an interval later; NextTimeout is zero while
// posts wait, so an event loop runs the engine at once. A burst of posts
// made between two engine passes thus leaves in one sendmmsg, with
// equal-size packets to one QP merged by GSO, as a NIC reads the WQEs of
// many posts after one doorbell. A device without the background
// goroutine (Config.ProgressInterval < 0) sends nothing until its owner
// runs the engine or waits on it.
//
// The ACK of a request that completed a receive (SEND, WRITE with
// immediate) is deferred: the consumer of the completion usually answers
// at once, and the ACK then leaves behind the answer in the same
// sendmmsg. A deferred ACK goes out with the next batch the device
// sends, at the end of the first engine pass whose receive finds the
// socket empty, or before its QP leaves its state, whichever comes
// first: while every pass finds more requests (a peer's burst taken a
// datagram at a time, such as the fragments of one large message), one
// coalesced ACK covers them, sent at the latest once 64 packets have
// arrived since it was held (an eighth of the largest window);
// NextTimeout is zero while one waits.
//
// So that a peer is not stalled when the owner stops driving the engine
// (a process busy elsewhere, a thread blocked in its own wait), a
// background goroutine runs Progress itself once nobody has run it for
// Config.ProgressInterval (2 ms), or at once when an owner says it goes
// to sleep on a completion channel (Device.Sleep), and from then on
// whenever a packet arrives, an engine timer is due or another interval
// has passed while nobody else runs the engine; it only takes the engine
// mutex if it is free (TryLock): it never competes with an owner that
// polls. It sleeps in Go's network poller on an epoll set of a timerfd,
// whose expiry every Progress pushes back (at most every half interval),
// and of the socket only while it watches for packets; so while an owner
// polls it never wakes, and neither does an idle thread of the runtime
// on its behalf. Many sleepers on one device (the workers of a process)
// leave the socket to it instead of all waking for every packet. An
// owner that drives several devices from one loop (a ucp worker with one
// rc iface per netdev) names the loop with CQ.SetProgressGroup; the
// goroutine leaves a device alone while that loop runs a pass on a
// sibling device or started one within the interval, up to eight
// intervals without an engine run (group.go). A
// caller with its own event loop uses Device.Fd (readable when packets
// wait) and Device.NextTimeout, or Device.Wait.
//
// Under the race detector, PostSend releases and every remote write
// acquires one sync object standing for the network (race_unsafe.go): a
// write placed by any device's engine goroutine is ordered after what the
// program did before its posts, as the standard library orders reads
// after writes on its files and sockets.
//
// # Window
//
// A requester keeps at most a window of PSNs outstanding. With no
// congestion control below it (a UDP socket, perhaps a rate-limited link
// with a short queue), the window adapts as TCP's congestion window does
// (cwnd.go): it is at most 512 PSNs (2 MiB at a 4096-byte MTU, what a
// link's queue of 50 ms at 400 Mbit/s holds), drops to 32 on a local ACK
// timeout, halves when the responder reports a gap (sequence NAK, implied
// NAK, a missing READ response), and grows back as TCP's window does
// (slow start to a threshold, then additively). A READ's responses arrive at once, so a READ
// starts only if they fit in the window beside what is outstanding.
//
// # Errors
//
// Work completions carry ibv_wc_status values (WCStatus). A QP that hits
// an error goes to ERR: its first failed WR completes with the real
// status, the others with WCWRFlushErr, and WRs posted later complete
// with WCWRFlushErr. Responder-side errors also post async events
// (QP request error, QP access error, QP fatal), as do CQ overrun (CQ
// error), SRQ limit, last WQE reached, SQ drained, communication
// established, the link going down or up (port error, port active), an
// address of the netdev added or removed (GID change), the socket failing
// (device fatal: QPs to ERR, new QPs refused) and packets with a bad ICRC
// (corrupt packet, at most once a second, beside the counter).
// SetRDMADisabled disables the device (device fatal; port active when it
// is enabled again). A RoCE port has no subnet manager: SM change and
// client re-register are never posted.
// API errors wrap uct status codes (uct.ErrInvalidParam,
// uct.ErrNoResource, uct.ErrRouteLost, ...).
//
// Limits: IPv4 only, one port, RC only, no memory windows, no
// alternate path; the ICRC assumes the IPv4 header a Linux unconnected
// socket with IP_PMTUDISC_DO sends (IP ID 0, DF).
package verbs
