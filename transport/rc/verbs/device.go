package verbs

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/internal/roce"
	"github.com/ucgo/ucgo/uct"
	"github.com/ucgo/ucgo/uct/uctkit"
)

// MTU is the IB path MTU enumeration (ibv_mtu).
type MTU = roce.MTU

// Path MTU values.
const (
	MTU256  = roce.MTU256
	MTU512  = roce.MTU512
	MTU1024 = roce.MTU1024
	MTU2048 = roce.MTU2048
	MTU4096 = roce.MTU4096
)

// PortState is the state of the device's port (ibv_port_state).
type PortState uint8

// Port states.
const (
	PortNop PortState = iota
	PortDown
	PortInit
	PortArmed
	PortActive
)

func (s PortState) String() string {
	switch s {
	case PortDown:
		return "PORT_DOWN"
	case PortInit:
		return "PORT_INIT"
	case PortArmed:
		return "PORT_ARMED"
	case PortActive:
		return "PORT_ACTIVE"
	}
	return "PORT_NOP"
}

// Config says which network device a Device uses.
type Config struct {
	// Interface is the netdev name ("eth0"). Either it or Addr is needed;
	// with both, Addr must belong to Interface.
	Interface string
	// Addr is the local IPv4 address; with only Interface, the
	// interface's first IPv4 address is used.
	Addr netip.Addr
	// Port is the local UDP port; 0 means 4791 (RoCEv2), -1 a port the
	// kernel picks (see LocalAddr). A peer whose port is not 4791 must be
	// named in the QP's address vector (AHAttr.DPort).
	//
	// Port 4791 is shared with the other processes of the host that use
	// it: an eBPF program steers each packet to the process owning its
	// destination QP, and the device takes its QPNs from the range it was
	// given (see SharedPort). Where eBPF is not permitted (not root, no
	// bpffs) or all 255 ranges are taken, the device binds 4791 alone if it
	// is free and a port the kernel picks otherwise. Any other port is
	// bound alone.
	Port int
	// NoShare makes a device on port 4791 bind it without joining the
	// processes that share it, as if eBPF were not permitted.
	NoShare bool
	// ProgressInterval is how long the owner may leave the engine
	// alone before the background goroutine runs Progress (default
	// 2 ms); after that, or once an owner calls Sleep, the goroutine runs
	// it whenever packets arrive or a timer is due. A negative value
	// disables the background goroutine.
	ProgressInterval time.Duration
	// SocketBuffer is the socket send and receive buffer size in bytes
	// (default 8 MiB; as root it is forced past the sysctl limits).
	SocketBuffer int
	// NoGSO disables UDP segmentation offload for multi-packet messages,
	// and UDP GRO (coalesced receive) with it.
	NoGSO bool
}

// DeviceAttr describes the device (a subset of ibv_device_attr).
type DeviceAttr struct {
	MaxQP          int
	MaxQPWR        int
	MaxSGE         int
	MaxCQE         int
	MaxQPRdAtom    int
	MaxQPInitRdAtm int
	MaxSRQWR       int
	MaxInlineData  int
}

var deviceAttr = DeviceAttr{
	MaxQP: 1 << 16, MaxQPWR: 1 << 14, MaxSGE: 32, MaxCQE: 1 << 20,
	MaxQPRdAtom: 128, MaxQPInitRdAtm: 128, MaxSRQWR: 1 << 14, MaxInlineData: 1024,
}

// PortAttr describes the port (a subset of ibv_port_attr).
type PortAttr struct {
	State     PortState
	MaxMTU    MTU
	ActiveMTU MTU
	// NetMTU is the MTU of the underlying netdev.
	NetMTU int
	GID    netip.Addr
}

// Counters are the device's packet counters.
type Counters struct {
	RxPackets      uint64
	TxPackets      uint64
	TxCalls        uint64 // sendmmsg calls
	TxDatagrams    uint64 // UDP datagrams sent (a GSO one carries several packets)
	RxCalls        uint64 // recvmsg and recvmmsg calls
	RxEmpty        uint64 // receive calls that found nothing waiting
	RxICRCErrors   uint64 // dropped: bad ICRC
	RxMalformed    uint64 // dropped: could not decode
	RxDropped      uint64 // dropped: unknown QP, wrong source, QP state
	TxDropped      uint64 // send failed (socket full, no route)
	Retransmits    uint64 // go-back-N restarts (timeout, NAK, RNR)
	Timeouts       uint64 // local ACK timeouts
	ReadRetries    uint64 // READs re-requested from a missing response
	SeqNAKsSent    uint64
	RNRNAKsSent    uint64
	SeqNAKsRcvd    uint64
	RNRNAKsRcvd    uint64
	DuplicatesRcvd uint64
	RxCoalesced    uint64 // datagrams that carried several packets (UDP GRO)
	RxPlaced       uint64 // payloads placed in the pass that checked the ICRC (rxplace.go)
	WatchdogRuns   uint64 // engine passes the background goroutine ran
}

// Device is an open RoCEv2 device: one UDP socket on one local address and
// port, the port state watched through netlink, and every PD, MR, CQ, QP
// and SRQ made from it. All of them are guarded by one engine mutex; see
// the package documentation for the progress model.
type Device struct {
	mu     sync.Mutex
	name   string
	index  int
	local  netip.AddrPort
	gid    netip.Addr
	netMTU int
	mtu    MTU
	state  PortState
	sock   *socket
	events *uct.EventQueue
	// Watchers are told about port up and down.
	Watchers uctkit.DeviceWatchers

	mrs    map[uint32]*MR
	qps    map[uint32]*QP
	keySeq uint32
	qpBase uint32 // top byte of every QPN: the port sharing range
	qpSeq  uint32 // low 16 bits of the last QPN handed out
	cqSeq  int
	srqSeq int
	rng    *rand.PCG

	// engine state
	epoch     time.Time
	lastProg  atomic.Int64 // ns since epoch of the last progress run
	ready     []*QP        // QPs with something to transmit
	acks      []*QP        // QPs with a deferred ACK (see deferAck)
	ackHeld   int          // packets received while deferred ACKs were held (releaseAcks)
	timed     []*QP        // QPs with an armed timer
	nextTimer int64        // ns since epoch; 0: none
	tx        txBatch
	rx        rxBatch
	ctr       Counters
	pkt       roce.Packet
	rxCheck   roce.CopyCheck // a placeable packet's ICRC (rxplace.go)
	rxICRC    roce.ICRCCache // pseudo-headers of the other received packets' ICRCs
	txICRC    roce.ICRCCache // pseudo-headers of the sent packets' ICRCs
	rxPlaced  bool           // the packet being handled is placed already
	scratch   []byte
	// posting is set while PostSend builds packets: small messages are
	// copied into the batch then (see PostSend).
	posting bool

	// The watchdog (see background): its timer, interval and the time
	// Progress last pushed the timer back (ns since epoch); wd is nil
	// without a watchdog.
	wd       *watchdogTimer
	wdIv     int64
	wdArmed  int64
	sleeping atomic.Bool // an owner went to sleep (Sleep)
	// yieldAt is when an owner's pass next yields the processor (see
	// yieldEvery), in ns since epoch.
	yieldAt int64
	// The progress groups of the CQs' owners (group.go): references by
	// group under mu, the list the watchdog reads, and the offset of
	// epoch on the groups' clock.
	grpRefs map[*uct.ProgressGroup]int
	groups  atomic.Pointer[[]*uct.ProgressGroup]
	grpOff  int64

	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
	nl     *linkWatch

	rdmaDisabled bool       // see SetRDMADisabled (disable.go)
	adminMu      sync.Mutex // serialises SetRDMADisabled
	fatal        bool       // the socket failed (fault.go)
	// corrupt-packet events (fault.go): time of the last one (ns since
	// epoch) and the ICRC error count it reported
	corruptAt   int64
	corruptSeen uint64
}

// Open opens a device on a local interface or address.
func Open(cfg Config) (*Device, error) {
	name, index, addr, netMTU, err := resolveLocal(cfg)
	if err != nil {
		return nil, err
	}
	port := cfg.Port
	if port == 0 {
		port = roce.Port
	}
	if port == -1 {
		port = 0
	}
	if port < 0 || port > 0xffff {
		return nil, fmt.Errorf("verbs: open: port %d: %w", port, uct.ErrInvalidParam)
	}
	d := &Device{
		name:   name,
		index:  index,
		local:  netip.AddrPortFrom(addr, uint16(port)),
		gid:    netip.AddrFrom16(addr.As16()),
		netMTU: netMTU,
		mtu:    roce.MTUFloor(netMTU - roce.Overhead(false)),
		state:  PortActive,
		events: uct.NewEventQueue(),
		mrs:    map[uint32]*MR{},
		qps:    map[uint32]*QP{},
		rng:    rand.NewPCG(uint64(time.Now().UnixNano()), uint64(port)),
		epoch:  time.Now(),
		stop:   make(chan struct{}),
	}
	d.grpOff = uct.GroupClock(d.epoch)
	if d.mtu == 0 {
		return nil, fmt.Errorf("verbs: open %s: netdev MTU %d too small for RoCE: %w", name, netMTU, uct.ErrUnsupported)
	}
	d.qpSeq = 0x10
	bufSize := cfg.SocketBuffer
	if bufSize <= 0 {
		bufSize = 8 << 20
	}
	d.sock, err = openSocket(d.local, bufSize, !cfg.NoGSO, port == roce.Port, !cfg.NoShare)
	if err != nil {
		return nil, fmt.Errorf("verbs: open %s: %w", d.local, err)
	}
	d.local = netip.AddrPortFrom(addr, d.sock.port)
	if m := d.sock.member; m != nil {
		d.qpBase, _ = m.QPNRange()
	}
	d.tx.init(d.sock.gso)
	d.rx.init(d.sock.gro)
	// The initial state is set before the watcher can report a change.
	nl, err := watchLink(d.index, func(up bool) {
		st := uct.DeviceUp
		if !up {
			d.state, st = PortDown, uct.DeviceDown
		}
		d.Watchers.Init(name, st)
	}, d.linkChanged, d.gidChanged)
	if err != nil {
		d.sock.close()
		return nil, fmt.Errorf("verbs: open %s: link watch: %w", name, err)
	}
	d.nl = nl
	iv := cfg.ProgressInterval
	if iv == 0 {
		iv = 2 * time.Millisecond
	}
	if iv > 0 {
		d.wd, err = newWatchdogTimer(d.sock.fd.Int())
		if err != nil {
			d.nl.close()
			d.sock.close()
			return nil, fmt.Errorf("verbs: open %s: watchdog: %w", name, err)
		}
		d.wdIv = int64(iv)
		d.wdArmed = d.now()
		d.wd.arm(iv)
		d.wg.Add(1)
		go d.background()
	}
	return d, nil
}

func resolveLocal(cfg Config) (name string, index int, addr netip.Addr, mtu int, err error) {
	addr = cfg.Addr.Unmap()
	if cfg.Addr.IsValid() && !addr.Is4() {
		return "", 0, addr, 0, fmt.Errorf("verbs: open: %v: only IPv4 is supported: %w", cfg.Addr, uct.ErrUnsupported)
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return "", 0, addr, 0, fmt.Errorf("verbs: open: %w", err)
	}
	var loop *net.Interface
	for i := range ifs {
		ifc := &ifs[i]
		if cfg.Interface != "" && ifc.Name != cfg.Interface {
			continue
		}
		if ifc.Flags&net.FlagLoopback != 0 && loop == nil {
			loop = ifc
		}
		as, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range as {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipn.IP)
			if !ok || !ip.Unmap().Is4() {
				continue
			}
			ip = ip.Unmap()
			if !addr.IsValid() || ip == addr {
				return ifc.Name, ifc.Index, ip, ifc.MTU, nil
			}
		}
	}
	// Any 127/8 address is local on the loopback device.
	if addr.IsValid() && addr.IsLoopback() && loop != nil {
		return loop.Name, loop.Index, addr, loop.MTU, nil
	}
	what := cfg.Interface
	if addr.IsValid() {
		what = fmt.Sprintf("%s %v", what, addr)
	}
	return "", 0, addr, 0, fmt.Errorf("verbs: open: no interface with IPv4 address %s: %w", what, uct.ErrInvalidAddress)
}

// Name returns the netdev name.
func (d *Device) Name() string { return d.name }

// GID returns the port's GID: the IPv4-mapped IPv6 form of its address.
func (d *Device) GID() netip.Addr { return d.gid }

// LocalAddr returns the local IP address and UDP port.
func (d *Device) LocalAddr() netip.AddrPort { return d.local }

// SharedPort reports whether the device shares its UDP port with other
// processes (see Config.Port). When it does not although it was to (port
// 4791 without NoShare), why says what prevented it.
func (d *Device) SharedPort() (shared bool, why error) {
	return d.sock.member != nil, d.sock.shareErr
}

// QPNRange returns the QP numbers the device hands out: with a shared
// port, those its packets are steered by.
func (d *Device) QPNRange() (first, last uint32) {
	return d.qpBase | qpnLowFirst, d.qpBase | 0xffff
}

// Events returns the device's async event queue (ibv_get_async_event).
func (d *Device) Events() *uct.EventQueue { return d.events }

// QueryDevice returns the device's limits.
func (d *Device) QueryDevice() DeviceAttr { return deviceAttr }

// QueryPort returns the port's attributes.
func (d *Device) QueryPort() PortAttr {
	d.mu.Lock()
	defer d.mu.Unlock()
	return PortAttr{State: d.state, MaxMTU: MTU4096, ActiveMTU: d.mtu, NetMTU: d.netMTU, GID: d.gid}
}

// Counters returns a snapshot of the packet counters.
func (d *Device) Counters() Counters {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ctr
}

// Fd returns the UDP socket's descriptor, readable when packets wait. A
// caller with its own poll loop runs Progress when it is readable and
// at least every NextTimeout.
func (d *Device) Fd() int { return d.sock.fd.Int() }

func (d *Device) rand() uint64 { return d.rng.Uint64() }

func (d *Device) postEvent(t uct.EventType, object string, owner any, err error) {
	d.events.Post(&uct.Event{Type: t, Object: object, Owner: owner, Err: err})
}

// gidChanged runs on the link watcher's goroutine when an address of the
// netdev was added or removed: the port's GID table changed.
func (d *Device) gidChanged() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.postEvent(uct.EventGIDChange, "port "+d.name, d, nil)
	}
}

// linkChanged runs on the link watcher's goroutine (the only one that
// changes the port's state). Going down, the device's status changes
// before the port refuses posts, so that an owner whose post is refused
// because the port is down and asks the device why finds its link down
// (ucp then names the fault ErrLocalNICFailed); coming up, the status
// changes once the port accepts posts again.
func (d *Device) linkChanged(up bool) {
	want := PortDown
	if up {
		want = PortActive
	}
	d.mu.Lock()
	same := d.state == want || d.closed
	d.mu.Unlock()
	if same {
		return
	}
	if !up {
		d.Watchers.SetLink(false)
	}
	d.mu.Lock()
	changed := d.state != want && !d.closed
	d.state = want
	d.mu.Unlock()
	if !changed {
		return
	}
	obj := "port " + d.name
	if up {
		d.postEvent(uct.EventPortActive, obj, d, nil)
		d.Watchers.SetLink(true)
	} else {
		d.postEvent(uct.EventPortError, obj, d, fmt.Errorf("verbs: %s: link down: %w", d.name, uct.ErrRouteLost))
	}
}

// Close closes the device: every QP goes to ERR (its work is flushed),
// the background goroutines stop, and the socket is closed. Events not
// yet acked are discarded.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	for _, qp := range d.qps {
		if qp.state != QPSReset && qp.state != QPSErr {
			qp.toErrLocked()
		}
	}
	close(d.stop)
	d.mu.Unlock()
	var err error
	if d.nl != nil {
		err = multierr.Append(err, d.nl.close())
	}
	if d.wd != nil {
		// Wakes the watchdog; Progress no longer arms it (closed).
		err = multierr.Append(err, d.wd.Close())
	}
	d.wg.Wait()
	d.mu.Lock()
	err = multierr.Append(err, d.sock.close())
	d.mu.Unlock()
	d.events.Close()
	return err
}
