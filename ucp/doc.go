// Package ucp is the layer an MPI-like runtime programs against: a
// Context (configuration and one memory domain per transport), Workers
// (progress engines with their own ifaces, tag matcher and request pool)
// and Endpoints (connections to peer workers over a set of transport
// lanes), with tag send/receive, active messages, RMA and atomics, flush
// and close, and an error model in which every request completes exactly
// once with its own status.
//
// # Setup
//
//	uc, _ := ucp.NewContext(ucp.Config{})         // shm and rc by default
//	w, _ := uc.NewWorker()
//	addr := w.Address()                           // exchange out of band
//	ep, _ := w.Connect(peerAddr, ucp.EPParams{})
//
// DefaultTransports are shm and, when a netdev other than loopback is up
// with an IPv4 address, rc (RoCEv2 from user space on that netdev);
// Config.Transports or UCGO_TLS choose others, and Config.NetDevices
// (UCGO_NET_DEVICES) puts rc on several netdevs, one iface each. Connect
// unpacks the peer's worker address (UnpackAddress) and connects lanes by
// capability: shm when both workers run on the same host and boot, else
// one network lane per reachable pair of devices (for rc: the peer's
// address lies in an IPv4 subnet of our iface's netdev; pairs that cannot
// reach each other are not tried, and when none is known to be reachable
// the first pair that connects is the one lane), or whatever the two
// workers' transports have in common. With Config.Failover in
// AnyTransport mode, two workers on one host also connect rc lanes that
// stand by beside shm and carry traffic only when no shm lane is healthy.
// With failover on, the worker watches each iface's device (link up and
// down, RDMA disabled): a device going down fails every lane on it with
// uct.ErrLocalNICFailed, after telling the peer over a lane on another
// device (its lanes to that device fail with uct.ErrRemoteNICFailed); a
// device coming back rebuilds those lanes (new transport endpoints, bound
// again), reported as failover.Restored events with
// uct.ErrLocalNICReinit, and at the peer uct.ErrRemoteNICReinit.
// LanesTo lists the lanes Connect would open. The AM lane is the one of
// lowest latency, the RMA lane the one of highest bandwidth. Connect then
// sends a wireup request carrying our address, our endpoint id and a
// random lane-bind token; the peer answers with its id and its token,
// creating an endpoint back to us if it has none. Operations started before the answer are queued.
// Every later message carries the receiver's endpoint id, so the receiver
// finds the sender with one slice index. The id is not trusted alone: an
// endpoint is bound to the connection its peer's wireup arrived on (the
// transport's AM source: the receiving rc QP, the sending shm iface), and
// a message naming it from any other connection, a close included, is
// dropped, counted in WorkerStats.LaneMismatch and reported to the drop
// handler (SetDropHandler). An endpoint with several lanes binds each:
// once the peer's id is known, a lane-bind carrying our token goes over
// every lane, and the receiver binds that lane's source only if the token
// is the one its peer's wireup carried (a wrong token is a lane mismatch);
// messages are accepted from any bound lane.
//
// # Operations
//
// TagSend/TagRecv (64-bit tags with masks), AMSend with
// SetAMHandler, Put/Get with Mem.PackRKey and Endpoint.UnpackRKey,
// AtomicPost/AtomicFetch (AtomicOp), Endpoint.Flush, Worker.Flush and
// Endpoint.Close return a *Request immediately. A request completes once;
// Wait(ctx) progresses the worker until then, Test polls, Cancel cancels
// a posted receive or a send that has not left, an optional callback runs
// from Progress (never inside the call that started the operation), and
// Release returns it to the worker's pool. As in UCX, whose
// ucp_tag_send_nbx and ucp_am_send_nbx return NULL for a message sent at
// once, TagSend and AMSend return a nil *Request when the message went
// inside the call (an eager message the lane took; with failover on, one
// logged in the sequenced channel, whose replay log keeps it until the
// peer acknowledges it) and the Params ask for no request (nil, or no
// Callback and no UserData); so does Put (ucp_put_nbx) for a put within
// the RMA lane's short limit that the lane wrote at once, with failover
// off (a put that may be replayed keeps its request). A nil *Request behaves as one completed
// with success: Wait, Test, Done, Err, Info, UserData, Cancel and Release
// accept it.
//
// TagSendSync is a synchronous send (MPI_Ssend): it always takes the
// rendezvous protocol, so it completes only after a receive matched it.
// TagProbe reports an unexpected message without taking it (MPI_Iprobe);
// TagProbeRemove takes it out of matching for TagRecvMessage
// (MPI_Improbe).
//
// Tag protocols by size, on the endpoint's AM lane: eager short (one
// AMShort, up to the lane's short limit minus 4 bytes or ShortThresh),
// eager bcopy, eager zcopy (from ZcopyThresh; left to its default, from
// the lane's own estimate, uct.IfaceAttr.AMZcopyMin, where it gives one:
// rc's AMZcopy copies like its AMBcopy, so rc sends eager by bcopy, while
// shm takes zcopy from 4 KiB), eager in fragments (with RndvThresh
// left to its default, on lanes whose eager sends copy and whose latency
// is a network's, such as rc: messages above one fragment up to 32 KiB;
// one whose first fragment finds a posted receive is matched then and
// its fragments are copied straight into the receive's buffer, one that
// arrives unexpected is reassembled as active messages are and then
// matched; tag_frag.go; not with failover on; every fragment but the last is cut
// to a length the lane sends in whole packets, uct.IfaceAttr.AMBcopyAlign,
// so that on rc one message's fragments leave in one GSO datagram), and rendezvous (from RndvThresh,
// and for every message larger than the eager protocols take). Rendezvous sends an RTS with the sender's registered buffer
// and packed key; the receiver GETs the data (RndvGet, default) and
// answers ATS, or (RndvPut) answers RTR with its own buffer's key, the
// sender PUTs and answers ATP. The data moves once, from the user's
// buffer into the user's buffer; the registrations of rendezvous buffers
// and the peer's unpacked keys are cached (bounded, least recently used
// evicted; a cached registration keeps its buffer referenced, so the
// registrations are bounded by bytes, Config.RcacheMax, and those of an
// endpoint no other endpoint used are released when it is closed or
// purged), so a buffer
// sent again costs no registration. Rendezvous data, Put and Get move in
// chunks of the RMA lane's zcopy limit; a chunk the lane refuses for lack
// of resources does not fail its request: the rest of the transfer waits
// (as in UCX's pending queue) and resumes in order when the lane has room,
// ahead of operations started later on the endpoint. An endpoint with
// two or more rc lanes of equal capability (rails: one per NIC pair)
// stripes rendezvous data and Put and Get transfers from 64 KiB over up
// to Config.MaxRndvRails of them (UCX_MAX_RNDV_RAILS): chunks of at most
// an equal share per rail go round robin, and the rendezvous key bundle
// carries the key of each rail's memory domain. Striping is measured, not
// assumed: the endpoint's rail gate compares the completion rates of
// its transfers striped and on the RMA lane alone (it starts on one
// rail; the way not in use is probed with a few transfers after the
// first 16 and now and then later) and stripes only while that moves
// clearly more (rate-limited rails, a QP's window limiting on a loaded
// host), else the transfers take one rail (rails that share one busy
// CPU, or a much slower second rail); WorkerStats.Rails counts its
// choices, and Config.StripeAlways stripes without it. While striping, a
// transfer that finds every rail with at least its own size of the
// endpoint's transfers in flight goes whole on the least loaded rail
// instead: the rails stay busy, and it costs the CPU what it costs on
// one lane (one request and one completion, not one per rail). All tag
// messages of one endpoint travel on
// one ordered lane and are matched on arrival, so messages with matching
// tags are never overtaken, eager and rendezvous mixed. A message longer
// than the receive buffer completes the receive with a *TruncatedError
// (errors.Is uct.ErrMessageTruncated); Info().Length is the message's
// length.
//
// Active messages (AMSend, handlers installed with SetAMHandler) have
// any size. Header and data that fit one AM fragment (MaxAM) go in one
// fragment and the handler sees the data in the transport's receive
// buffer. Larger messages below the rendezvous threshold (RndvThresh, by
// default one fragment) go eager in fragments, reassembled on arrival
// (partial messages are keyed by sender and message id, and dropped when
// the sender's endpoint fails or is purged; their memory grows as
// fragments arrive, bounded per peer and per worker by
// Config.AMReassemblyPeerMax and AMReassemblyMax: a message that would
// exceed a limit fails alone, counted in WorkerStats.AMReassemblyDrops
// and reported to the worker's drop handler, SetDropHandler); larger
// ones, when the
// endpoint has a get lane, by rendezvous: an RTS with the user header,
// the sender's registered buffer and packed key. The handler of a
// rendezvous message gets AMMessage.Rndv set and Data nil; it receives
// the data into its own buffer with AMMessage.RecvData
// (ucp_am_recv_data_nbx: the receiver GETs and answers ATS, which
// completes the send), from the handler or later after AMMessage.Keep.
// A handler that neither receives nor keeps it drops the data and the
// send completes; Release drops a kept one. A handler may Keep eager
// data too (UCX's returning UCS_INPROGRESS): data assembled from
// fragments is handed over, one fragment is copied. The header must fit
// one fragment. An AM rendezvous in flight when its endpoint fails
// completes the send with the lane's status and the receive-data
// request with the failure.
//
// # Errors
//
// In ErrorModePeer every request completes even after a force close or
// the peer's death, and each endpoint's ErrorHandler runs once (from
// Progress; it may close the endpoint). A failed endpoint fails new
// operations at once with its status; requests queued on it complete with
// uct.ErrCanceled, requests in flight with the transport's status (for a
// dead peer an error matching uct.ErrPeerFailed; for an atomic, which the
// target may have applied, one that also matches
// failover.ErrOutcomeUnknown, whatever the failover mode). Peer death comes from
// the transport (shm: pidfd; rc: the connection manager link ends, or,
// when the peer is cut off, work requests exceed their retries and fail
// with uct.ErrEndpointTimeout) or from keepalive: every KeepaliveInterval
// the worker checks the liveness of every lane (uct CheckLiveness) and
// sends each peer a heartbeat. A lane whose link is down refuses posts
// with uct.ErrRouteLost, a transient status: its requests wait queued
// for the link to come back, but a lane whose liveness checks are
// refused so for longer than the endpoint's timeout (EPParams.Timeout,
// 3 s when unset) has failed with uct.ErrRouteLost, so an endpoint whose
// requests all wait for answers that cannot come still fails. With Config.DetectSilentPeers a peer none
// of whose heartbeats arrived for three intervals (its own, if longer) is
// silent: stopped, hung, cut off, or not calling Progress for that long;
// its endpoint fails with an error matching uct.ErrEndpointTimeout. It is
// off by default, so a peer in a long compute phase is not failed; peers
// that send no heartbeats (ErrorModeNone, keepalive disabled) are never
// judged silent. A peer stopped in the middle of an shm send holds the
// head of our receive FIFO; the other peers' messages, heartbeats among
// them, are delivered around it for the rest of one lap of the FIFO
// (transport/shm, Iface.HeldFIFO), after which they wait for the holder
// to go on or die, and with DetectSilentPeers they too are failed as
// silent.
//
// When an endpoint fails, tag matching is suspended (MatchingSuspend):
// messages from healthy peers are still accepted and queued as
// unexpected, posted receives stay posted, and every posted receive that
// could match the failed peer is told once: Wait/Test return
// ErrProcFailedPending (a *PendingError, not a final status: see Final)
// while the request stays pending. ResumeMatching
// restarts matching in the original order; Purge(ep) closes the endpoint,
// completes the receives that can only match it with its error, drops its
// unexpected messages, partial rendezvous transfers and partial active
// messages and then restarts matching. MatchingNeverSuspend completes the
// receives that can only match the failed peer at once and keeps
// matching. In ErrorModeNone failures still fail the endpoint's requests,
// but no callback runs and matching never stops.
//
// A receive can only match a peer when the worker knows which tag bits
// carry the source rank (Config.SourceTagMask, EPParams.SourceTag) and the
// receive's mask covers them all; without a mask every receive counts as
// a wildcard. A receive posted after a failure that can only match failed
// or purged peers completes at once with the peer's error (as ULFM fails
// a receive from a failed process), also while matching is suspended,
// unless an unexpected message that arrived before the failure matches
// it (then it waits for ResumeMatching or Purge like the others). A
// wildcard receive posted after a purge stays posted: other peers may
// match it. In suspend mode, receives posted before a failure that can
// only match the failed peer stay posted, told, until Purge (also after
// ResumeMatching). A peer that
// comes back, a restarted process connected with Connect and the same
// EPParams.SourceTag, is a new endpoint: from then on receives for its
// rank wait for it, and the purged endpoint's rank is forgotten.
// Receives name ranks, not endpoints: if the new endpoint comes before
// the failed one is purged, Purge leaves the receives for that rank
// posted.
//
// Messages that arrive for an endpoint after it failed (its peer may be
// alive and still sending on a lane that delivers, e.g. after keepalive
// failed it as silent) are dropped: eager and rendezvous tag messages are
// not queued as unexpected (no rendezvous data is fetched), active
// messages and their fragments reach no handler. Worker.Stats counts them
// (WorkerStats.FailedDrops).
//
// # Failover
//
// With Config.Failover's Mode off (the default; UCGO_FAILOVER=off) a lane
// error fails its endpoint as described under Errors. With it on (same:
// to another lane of the failed lane's transport, and lane choice never
// leaves the transport of the endpoint's first lane, so a failed shm
// lane with only rc left fails the endpoint, also when the peer moved to
// rc; any: to any lane), or
// when the peer has it on, every ucp message of an endpoint but wireup,
// lane-bind and keepalive travels in a sequenced channel: numbered per
// endpoint whatever lane carries it, kept in the sender's replay log
// until the peer acknowledges it, and delivered by the receiver once and
// in order (duplicates are dropped and counted in
// WorkerStats.Duplicates), so tag matching order never changes. The log
// keeps a copy of each message: eager payloads are copied (there is no
// eager zero-copy), and the protocol limits are those of the smallest AM
// fragment among the endpoint's lanes, so a logged message fits any
// lane. Acknowledgements ride on traffic (the sender takes them when one
// covers every message of its log, as in request and response traffic,
// whose messages then all use one cell of the log; when its log holds 16
// messages; or when sends wait for room, or a flush or a failover asks);
// a lone one goes when a quarter
// of the window (1024 messages) is owed, when a flush or a full log asks
// for one, and at every keepalive round. A sender with 1024 messages
// unacknowledged waits, as for back-pressure. A flush completes only when
// the messages sent before it are acknowledged (the peer must progress).
// Atomics travel as active messages that the target's worker applies to
// its own memory (MemMap, MemAlloc; a key or range outside it fails with
// uct.ErrRemoteProtection), once: the channel never delivers a request
// twice. The target's answer (the fetched value) is a sequenced message
// too, kept in the target's log until acknowledged, so an atomic applied
// on the target whose answer was lost with a failed lane completes with
// the answer replayed over the new lane, once, with the value the target
// fetched; the initiator never has to ask the target what became of it.
// An atomic unanswered when its endpoint fails completes with an error
// matching failover.ErrOutcomeUnknown (it may have been applied; no lane
// is left to ask); it is not retried.
//
// Every place that learns that one lane broke (a failed post or wireup, a
// completion with an error, a liveness check, an iface error naming the
// lane's uct endpoint) reports it to the worker. Posts refused because
// the lane's link is down (uct.ErrRouteLost) while another lane is up are
// such a fault, and a lane whose work requests exceed their retries while
// another lane is up has lost its route (uct.ErrRouteLost), not its
// peer. When the policy accepts the status (failover.Policy.ShouldFailOver:
// never uct.ErrPeerFailed, a dead peer) and allows another lane that is
// up, the lane is marked failed and closed, the AM and RMA lanes are
// chosen again and a sync over the new AM lane tells the peer what this
// side delivered; the peer replays from its log what that does not cover,
// moves its AM lane to the lane the sync came on and answers with what it
// delivered; this side replays its own rest. Sequenced sends wait until
// then. A sync or its answer can be lost with the lane that carried it
// (a flapping link), so a sync goes again while unanswered: on the new AM
// lane when that moves, else every probe interval (WorkerStats.Resyncs).
// Syncs are numbered: the peer acts on each once and answers repeats, and
// an answer to a sync that a later failover or fail-back superseded ends
// no wait. The sync also names the lane left and its status: the peer
// fails and closes its end of that lane at once (so that nothing still queued
// on it lands after the replay) and reports the move as well, the
// sender's local NIC being its remote one (uct.ErrRemoteNICFailed).
// Rendezvous data, Put and Get moving on the failed lane start again on
// the new RMA lane from the requests' own buffers (writing or reading the
// same bytes again is harmless). The failed lane is fenced first, as
// SMC-R fences a failed link: a side sends its sync, or its answer, only
// once its end of the lane is closed (its QP in the error state applies
// no packet), and the side that sent the sync posts the moved writes
// (Put, rendezvous PUT) only once the answer came, so a write sent on the
// failed lane never lands after its copy on the new lane, nor after the
// operation completed and the peer heard of it. The key bundle that a
// sequenced endpoint's rendezvous announces holds the buffer's key for
// every lane's memory domain. SetFailoverHandler hears each move from
// Progress as a failover.Event: the failed and the new lane, the cause,
// Detect (how long the failed lane had been silent when its fault was
// seen; messages are counted, not timed, so it is a bound that never
// understates the silence: see heard.go) and Switch (from the fault seen to the sync sent);
// WorkerStats.FailedOver and Replayed (messages and transfers sent again)
// count them. With no lane left to move to, the endpoint fails with the
// cause and the handler hears failover.Exhausted.
//
// # Environment
//
// NewContext reads these variables:
//
//	UCGO_TLS=shm,rc               transports to use (names of Config.Transports)
//	UCGO_SHORT_THRESH=64          eager short limit (bytes, k/m suffixes)
//	UCGO_ZCOPY_THRESH=4k          eager zcopy threshold (every lane)
//	UCGO_RNDV_THRESH=8k           rendezvous threshold ("inf" for eager only)
//	UCGO_RNDV_SCHEME=get|put      rendezvous data mover
//	UCGO_ERR_MODE=none|peer       error mode
//	UCGO_KEEPALIVE_INTERVAL=1s    keepalive period (Go duration or seconds; 0 disables)
//	UCGO_KEEPALIVE_SILENT=1       fail peers that send no heartbeats (DetectSilentPeers)
//	UCGO_MATCHING_MODE=suspend|never_suspend
//	UCGO_THREAD_SAFE=1            workers safe for several goroutines
//	UCGO_AM_REASSEMBLY_MAX=1g     Config.AMReassemblyMax
//	UCGO_AM_REASSEMBLY_PEER_MAX=256m  Config.AMReassemblyPeerMax
//	UCGO_RCACHE_MAX=64m           Config.RcacheMax
//	UCGO_FAILOVER=off|same|any    Config.Failover's Mode
//	UCGO_NET_DEVICES=eth0,eth1    Config.NetDevices: rc on these netdevs ("all": every usable one)
//	UCGO_MAX_RNDV_RAILS=2         Config.MaxRndvRails: rails a transfer is striped over (1: none)
//	UCGO_STRIPE_ALWAYS=1          Config.StripeAlways: stripe without the rail gate
//
// # Configuration precedence
//
// Each Config field takes the first of, highest precedence first:
//
//  1. the value the program set in the Config given to NewContext;
//  2. its UCGO_* environment variable, when the program left the field at
//     its zero value;
//  3. the built-in default.
//
// This is UCX's order: ucp_config_read fills a configuration from the
// defaults and the UCX_* environment, and the program's own settings
// (ucp_config_modify) are applied over it. The environment tunes what the program left open; it never undoes
// what the program chose. A field set to its zero value (false,
// ErrorModeNone, RndvGet, MatchingSuspend, 0) cannot be told from an
// unset one, so the environment may still set it; a program that must
// keep such a value reads it back from Context.Config. A bad value of a
// variable is an error (wrapping uct.ErrInvalidParam) even when its field
// is set. Context.Config returns the configuration in effect.
//
// # Concurrency and ownership
//
// A Worker is driven by one goroutine unless Config.ThreadSafe is set.
// A thread-safe worker keeps the transports' contract (uct: an iface and
// its endpoints are used by one goroutine at a time; rc posting and rc
// progress share unlocked queues) with a transport lock, besides the lock
// of its own state: whoever calls into an iface or a uct endpoint holds
// it, whether posting, progressing, arming, sleeping in Wait, connecting
// or closing a lane. An operation takes it only if it is free (TryLock,
// under the state lock); otherwise it queues its work on its endpoint
// and the lock's holder sends the queue before releasing it (a holder
// sleeping in Wait is woken), so an operation never blocks on the
// transports and an AM handler (which runs inside the transport's
// progress, holding the lock) may start operations. Progress runs the
// transports and the work that posts under the lock and the request
// callbacks and error handlers after releasing it; one Progress runs at
// a time. Wait sleeps holding the lock, so one goroutine sleeps in the
// transports at a time and the others wait for the lock; a request
// completed by another goroutine wakes the sleeper. Connect (when it
// creates an endpoint), Close, Wait and Request.Wait take the lock
// blocking: they must not be called from an AM handler. The worker's own
// uct callbacks (its AM handlers and completions) run with the lock held
// and post at once; operations started by a user's AM handler are queued
// and sent when the transports' progress returns. Lanes closed by an
// operation are closed by the lock's holder after the state lock is
// released, since closing runs their completions. Memory domains
// (registration, remote keys) are shared by the context's workers and
// are not under the lock. A single-goroutine worker takes no lock at
// all. No goroutine runs on the data path; the only
// background goroutine is the timer of a Peer-mode worker or one with
// failover on: it marks keepalive rounds and, with failover, probe rounds
// due (every Policy.ProbeInterval each lane of an endpoint with several
// is probed over itself; one that misses Policy.ProbeMisses probes while
// another answers fails with uct.ErrRouteLost) and wakes Progress. The
// Context owns the memory domains, a Worker its ifaces, endpoints,
// requests and unexpected messages; Close of each is idempotent.
// Endpoints keep their lanes as a lane set (one uct endpoint and its iface
// attributes per lane); queued work is bound to no lane; moving an
// endpoint's traffic off a failed lane is described under Failover.
// Progress polls on
// every call the ifaces that carry an AM or RMA lane, have delivered a
// message of a conversation or are cheap to poll (shm); the others (an
// rc iface of a worker that only talks over shm, or that carries only
// lanes standing by: lane-binds, probes, keepalives and lone
// acknowledgements leave it idle) every 16384 calls, after every Wait
// and four times a probe interval.
//
// # Lock order
//
// A thread-safe worker has four locks. A goroutine that holds several
// took them in this order:
//
//  1. progMu: one Progress at a time (TryLock: a Progress that finds it
//     held returns at once);
//  2. tmu, the transport lock: held while calling into ifaces and uct
//     endpoints (posting, progress, arming, sleeping in Wait, connecting,
//     closing a lane);
//  3. mu, the worker's state lock;
//  4. amu: the queue of iface errors reported from transports'
//     goroutines; nothing is taken while it is held.
//
// A holder of mu never blocks on tmu: it TryLocks it (canPost) or queues
// its work for tmu's holder, who sends it before releasing tmu
// (releaseT). To block on tmu, a goroutine releases mu first (acquireT).
// uct callbacks run inside a transport's progress, with tmu held, and
// take mu (lockCB). Request callbacks, error handlers and the closing of
// detached lanes run with mu released. A single-goroutine worker takes
// none of these locks except amu.
package ucp
