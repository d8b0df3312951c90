// Package rc is the uct transport over RDMA reliable-connected queue pairs
// of the verbs model in transport/rc/verbs, whose first provider speaks
// RoCEv2 over UDP from user space.
//
// # Objects
//
// A [Component] opens memory domains; its [Config] names the netdev (and
// optionally the address and UDP port) of the verbs device. An [MD] owns
// one verbs device and protection domain: Register makes a memory region
// (the packed remote key is a version byte, the verbs rkey and the MD's
// random 64-bit id), Alloc registers fresh 8-byte aligned Go memory (it is
// not shared memory: peers reach it with RDMA only). An [Iface] owns a CQ
// with a completion channel, a shared receive queue of pre-posted receive
// buffers for active messages, bounce buffers for bcopy sends, and a
// connection manager that listens on a TCP port of the device's address.
// An [Endpoint] owns one RC QP.
//
// # Connection establishment
//
// The iface address carries the device's IPv4 address (the GID), its UDP
// port, the connection manager's TCP port and a random nonce of the iface.
// The UDP port is 4791, shared with the host's other processes through
// eBPF steering, unless eBPF is not permitted and the device had to bind a
// port of its own (see verbs.Config.Port); peers send to the port in the
// address, so both kinds of device talk to each other.
// Connect creates a QP, dials the peer's connection manager (bounded by
// EPParams.Timeout, default 3 s) and sends REQ (GID, UDP port, QPN, start
// PSN, path MTU, both nonces, credit window, local ACK timeout); the peer
// checks the nonce,
// creates its own QP, brings it to RTS and answers REP (QPN, PSN, MTU,
// window); the requester then brings its QP to RTR and RTS. The local ACK
// timeout is scaled so that retry_cnt (6) + 1 attempts take about half of
// EPParams.Timeout, and the peer's QP takes the same timeout from REQ, so
// that its direction (credit grants, replies, a rendezvous' READs) does
// not give up on a busy requester sooner than the requester's own does;
// rnr_retry is 7 (infinite, RNR is back-pressure). The
// TCP connection stays open as the endpoint's lifeline: Endpoint.Close
// sends DREQ and the peer destroys its QP; if the peer iface closes, it
// sends DREQ the other way and the endpoint enters its error state with
// uct.ErrConnectionReset; if the connection ends without DREQ (the peer's
// process died and its kernel closed the socket), with uct.ErrPeerFailed
// (watched by one goroutine per endpoint, off the hot path).
//
// Connect waits for the peer's answer. StartConnect (uct.ConnectStarter)
// creates the QP and starts the TCP connect on the caller's thread, in its
// network namespace, and returns; a goroutine of its own sends REQ and
// waits for the answer, and Connecting.Finish, called from the Progress
// goroutine, brings the QP to RTS and makes the endpoint. Connecting.Cancel
// or the iface's Close abandons a connection still pending.
//
// # Data path
//
// An AM is a SEND (without immediate data) of a 1-byte header, the AM
// id, followed by the message; the handler gets the bytes after the
// header. Its packets are full path-MTU packets but the last, which is
// shorter, so the device sends any AM in one GSO datagram (an immediate
// would ride in the last packet and, whenever that made it the longest,
// cut the datagram before it). AMShort and small AMBcopy messages are
// sent as inline data, larger ones from a bounce buffer. AMZcopy copies
// header and buffers the same way and completes at once: its messages
// fit one bounce buffer (16 KiB and 64 bytes, so that a 16 KiB message
// with ucp's headers fits one), and a copy of that size costs less than
// registering the buffers and holding them until the peer's ACK; the
// iface says so (IfaceAttr.AMZcopyMin beyond AMMaxZcopy), so ucp sends
// eager messages by AMBcopy. A receive buffer holds the header and
// 16 KiB and 64 bytes of message, which starts 64-byte aligned. A
// received message without the header or with an id above
// uct.MaxAMID is dropped. Each endpoint holds a window of 128 credits,
// one per AM; the receiving iface returns credits every 64 receives
// with a zero-length SEND_WITH_IMM on its QP (bit 31 of the immediate
// marks a grant, its low 16 bits count the credits; a receive with any
// other immediate is dropped), so a receiver's SRQ is not flooded.
// Without a credit, a free send
// queue slot or a bounce buffer, operations return uct.ErrNoResource and
// pending requests are dispatched from Progress when room returns.
// PutShort/PutBcopy are inline or bounce-buffer RDMA WRITEs, PutZcopy a
// WRITE and GetBcopy/GetZcopy a READ straight from/into the caller's
// buffers, which are registered for the duration of the operation. A
// 64-bit fetch-add and compare-swap are the verbs atomics; every other
// atomic is emulated with a compare-and-swap loop (see atomic.go).
// CheckLiveness is a zero-length RDMA WRITE. Every work request is
// signaled; Flush completes when all operations numbered before it have
// completed, Flush(cancel) moves the QP to ERR so the rest complete with
// uct.ErrCanceled (and the endpoint stays canceled).
//
// # Errors
//
// A failed work completion fails its operation with an *uct.OpError:
// retry exceeded → uct.ErrEndpointTimeout, remote access or invalid
// request → uct.ErrRemoteProtection, RNR retry exceeded →
// uct.ErrRNRRetryExceeded; the endpoint enters that error state (Err
// returns it, later operations fail fast, the iface error handler is
// called and uct.EventEndpointError is posted) and its other outstanding
// operations complete with uct.ErrFlushed (uct.ErrCanceled after Close or
// Flush(cancel)). When the device's link goes down, new operations fail
// with uct.ErrRouteLost, whose remedy is to retry: the endpoint stays
// healthy and works again once the link is up, while operations in flight
// are retransmitted until their retries run out. uct.EventPortError is
// posted on every iface of the device and WatchDevice watchers hear
// DeviceDown (DeviceUp and EventPortActive when it returns).
// Iface.SetRDMADisabled disables the device (NetworkDirect's
// RDMA-disabled status, DeviceRDMADisabled for watchers,
// uct.EventDeviceFatal): its QPs are flushed, it receives nothing, every
// endpoint fails with uct.ErrLocalNICFailed and the peers' endpoints,
// told over the connection manager, with uct.ErrRemoteNICFailed. QP
// async events of the device go to the endpoint (or iface) that owns
// the QP.
//
// # Progress and blocking
//
// Progress drives the verbs engine (through polling the CQ), runs
// completions and AM handlers and dispatches pending requests on the
// caller's goroutine. Arm arms the CQ; Wait sleeps in poll(2) on the
// completion channel, the device's socket and a wake eventfd.
//
// # Wire formats
//
// Owned by this package, each with a fuzz target: the iface address (32
// bytes), the packed remote key (13 bytes), the connection manager
// messages REQ, REP, REJ and DREQ (framed with a magic, version, type and
// length) and the AM header (1 byte, the AM id). The connection
// manager's version stands for the framing of AMs and grants too.
//
// An iface and its endpoints are used from one goroutine at a time (the
// Progress goroutine): posting, Progress, Arm, Wait, Connect,
// StartConnect, Connecting's methods and Close
// share the iface's unlocked queues, so a user driving them from several
// goroutines serializes every call (as ucp's thread-safe worker does with
// its transport lock); only Wake is safe from any goroutine. An MD's
// Register, Alloc and UnpackRKey and a Mem's Close may run on any
// goroutine (the verbs device serializes them), so the ifaces of several
// workers share one MD. The connection manager and lifeline goroutines
// only touch state behind the iface's mutex or atomics. Close is
// idempotent on every object.
package rc
