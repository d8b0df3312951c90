package rc

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/transport/rc/verbs"
	"github.com/ucgo/ucgo/uct"
)

const transportName = "rc"

// Config chooses the verbs device the component's memory domains open.
type Config struct {
	// Device is the netdev ("eth0", "lo"). "" picks the first netdev that
	// is up, not loopback and has an IPv4 address, else "lo".
	Device string
	// Addr is the local IPv4 address; invalid means the device's first.
	Addr netip.Addr
	// Port is the RoCEv2 UDP port; 0 means 4791, shared with the host's
	// other processes where eBPF is permitted and replaced by a port of
	// the device's own otherwise (see verbs.Config.Port). The iface
	// address carries the port.
	Port int
	// NoShare binds port 4791 without sharing it (verbs.Config.NoShare).
	NoShare bool
	// ProgressInterval is verbs.Config.ProgressInterval: how long the
	// device's background goroutine lets an owner that stopped polling
	// leave the engine alone before it makes progress itself (default
	// 2 ms); an iface sleeping in Wait leaves the socket to it. Negative
	// turns it off, and then only the ifaces' Progress and Wait run the
	// device (each Wait watching the device's socket).
	ProgressInterval time.Duration
}

// Component is the rc transport.
type Component struct{ cfg Config }

// New returns the rc component. The zero Config picks the defaults.
func New(cfg Config) *Component { return &Component{cfg: cfg} }

// Name returns "rc".
func (*Component) Name() string { return transportName }

// Devices lists the netdevs that have an IPv4 address.
func (*Component) Devices() ([]uct.DeviceInfo, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("rc: list netdevs: %w", err)
	}
	var out []uct.DeviceInfo
	for _, ifc := range ifs {
		if hasIPv4(&ifc) {
			out = append(out, uct.DeviceInfo{Name: ifc.Name, Kind: "net"})
		}
	}
	return out, nil
}

func hasIPv4(ifc *net.Interface) bool {
	as, err := ifc.Addrs()
	if err != nil {
		return false
	}
	for _, a := range as {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return true
		}
	}
	return false
}

// defaultDevice is the first up, non-loopback netdev with IPv4, else lo.
func defaultDevice() string {
	ifs, err := net.Interfaces()
	if err == nil {
		for _, ifc := range ifs {
			if ifc.Flags&net.FlagUp != 0 && ifc.Flags&net.FlagLoopback == 0 && hasIPv4(&ifc) {
				return ifc.Name
			}
		}
	}
	return "lo"
}

// OpenMD opens a memory domain: one verbs device (the netdev and UDP port
// of the component's Config) with one protection domain. Every iface and
// every registration of the MD lives on that device.
func (c *Component) OpenMD(uct.MDParams) (uct.MD, error) {
	vc := verbs.Config{Interface: c.cfg.Device, Addr: c.cfg.Addr, Port: c.cfg.Port, NoShare: c.cfg.NoShare, ProgressInterval: c.cfg.ProgressInterval}
	if vc.Interface == "" && !vc.Addr.IsValid() {
		vc.Interface = defaultDevice()
	}
	dev, err := verbs.Open(vc)
	if err != nil {
		return nil, fmt.Errorf("rc: open device: %w", err)
	}
	pd, err := dev.AllocPD()
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("rc: alloc pd: %w", err)
	}
	m := &MD{dev: dev, pd: pd, id: randU64() | 1, ifaces: map[*Iface]struct{}{}}
	ctx, cancel := context.WithCancel(context.Background())
	m.stopEvents = cancel
	m.wg.Add(1)
	go m.forwardEvents(ctx)
	return m, nil
}

func randU64() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return binary.LittleEndian.Uint64(b[:])
}

// MD is the rc memory domain: a verbs device and protection domain.
type MD struct {
	dev *verbs.Device
	pd  *verbs.PD
	id  uint64

	mu     sync.Mutex
	ifaces map[*Iface]struct{}
	closed bool

	stopEvents context.CancelFunc
	wg         sync.WaitGroup
	once       sync.Once
	cerr       error
}

// Device returns the verbs device of the MD.
func (m *MD) Device() *verbs.Device { return m.dev }

// Attr describes the MD.
func (m *MD) Attr() uct.MDAttr {
	return uct.MDAttr{Component: transportName, CanRegister: true, CanAlloc: true, RKeySize: rkeyLen, MaxAlloc: uct.MaxRegion, MaxReg: uct.MaxRegion}
}

func verbsAccess(a uct.Access) verbs.Access {
	v := verbs.AccessLocalWrite
	if a&uct.AccessRemoteRead != 0 {
		v |= verbs.AccessRemoteRead
	}
	if a&uct.AccessRemoteWrite != 0 {
		v |= verbs.AccessRemoteWrite
	}
	if a&uct.AccessRemoteAtomic != 0 {
		v |= verbs.AccessRemoteAtomic
	}
	return v
}

// Register registers buf as a verbs memory region.
func (m *MD) Register(buf []byte, access uct.Access) (uct.Mem, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("rc register: empty buffer: %w", uct.ErrInvalidParam)
	}
	mr, err := m.pd.RegMR(buf, verbsAccess(access))
	if err != nil {
		return nil, fmt.Errorf("rc register: %w", err)
	}
	return &mem{md: m, mr: mr}, nil
}

// Alloc allocates size bytes of Go memory (8-byte aligned, so atomics
// work on any aligned word in it) and registers it. The memory is not
// shared with peers: they reach it with RDMA only.
func (m *MD) Alloc(size int, access uct.Access) (uct.Mem, error) {
	if size <= 0 {
		return nil, fmt.Errorf("rc alloc: size %d: %w", size, uct.ErrInvalidParam)
	}
	words := make([]uint64, (size+7)/8)
	buf := wordBytes(words)[:size]
	return m.Register(buf, access)
}

// UnpackRKey decodes a key packed by a peer's Mem.PackRKey.
func (m *MD) UnpackRKey(packed []byte) (uct.RKey, error) {
	k, id, err := unpackRKey(packed)
	if err != nil {
		return nil, err
	}
	return &rkey{key: k, md: id}, nil
}

// shared reports whether the MD's device serves more than one iface.
func (m *MD) shared() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ifaces) > 1
}

// Close closes the device: its QPs go to ERR and its socket is closed.
// Close ifaces first.
func (m *MD) Close() error {
	m.once.Do(func() {
		m.mu.Lock()
		m.closed = true
		its := make([]*Iface, 0, len(m.ifaces))
		for it := range m.ifaces {
			its = append(its, it)
		}
		m.mu.Unlock()
		var err error
		for _, it := range its {
			err = multierr.Append(err, it.Close())
		}
		m.stopEvents()
		err = multierr.Append(err, m.dev.Close())
		m.wg.Wait()
		m.cerr = err
	})
	return m.cerr
}

// forwardEvents acks the device's async events and posts each to the
// ifaces it concerns: port and device events to every iface, QP events to
// the iface that owns the QP.
func (m *MD) forwardEvents(ctx context.Context) {
	defer m.wg.Done()
	q := m.dev.Events()
	for {
		ev, err := q.Get(ctx)
		if err != nil {
			return
		}
		e := *ev
		ev.Ack()
		m.mu.Lock()
		its := make([]*Iface, 0, len(m.ifaces))
		for it := range m.ifaces {
			its = append(its, it)
		}
		m.mu.Unlock()
		for _, it := range its {
			it.deviceEvent(&e)
		}
	}
}

type mem struct {
	md   *MD
	mr   *verbs.MR
	once sync.Once
	err  error
}

func (x *mem) Bytes() []byte    { return x.mr.Bytes() }
func (x *mem) Address() uint64  { return x.mr.Addr() }
func (x *mem) PackRKey() []byte { return packRKey(x.mr.RKey(), x.md.id) }

// Close deregisters the region; later remote accesses with its key fail
// with a remote access error.
func (x *mem) Close() error {
	x.once.Do(func() { x.err = x.mr.Dereg() })
	return x.err
}

// rkey is an unpacked remote key.
type rkey struct {
	key uint32
	md  uint64
}

func (*rkey) Close() error { return nil }
