package fault

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"go.uber.org/multierr"
)

// RoCEv2Port is the IANA UDP port of RoCEv2.
const RoCEv2Port = 4791

// ErrConfig is wrapped by errors about a bad [Config].
var ErrConfig = errors.New("fault: bad config")

// Config says which packets a [Fault] acts on and what it does to them.
// A packet matches when it is IPv4/UDP (first fragment) and passes the
// Only* filters. A matching packet is acted on when BlackHole is set or a
// per-packet random draw falls below Fraction. Acting means dropping it,
// or with Corrupt, flipping the bits of one byte and letting it pass.
type Config struct {
	// Fraction of matching packets to act on, 0 to 1.
	Fraction float64
	// OnlyUDPPort, when not zero, restricts matching to this UDP
	// destination port ([RoCEv2Port] for RoCE).
	OnlyUDPPort uint16
	// OnlyDestQPN, when set, restricts matching to packets whose BTH
	// DestQP (UDP payload bytes 5..7, big-endian, 24 bits) equals it.
	OnlyDestQPN *uint32
	// BlackHole acts on every matching packet, whatever Fraction says.
	BlackHole bool
	// Corrupt flips all bits of the UDP payload byte at CorruptOffset
	// instead of dropping, and fixes the UDP checksum so the packet
	// still reaches the socket (an ICRC check has to catch it). Packets
	// too short to hold that byte pass unchanged.
	Corrupt       bool
	CorruptOffset uint16
	// AllIPv4 drops every IPv4 packet, TCP included (the connection
	// manager's traffic), as a path that carries nothing at all does.
	// The other fields must be zero.
	AllIPv4 bool
}

func (c Config) encode() ([]byte, error) {
	if math.IsNaN(c.Fraction) || c.Fraction < 0 || c.Fraction > 1 {
		return nil, fmt.Errorf("%w: Fraction %v not in [0, 1]", ErrConfig, c.Fraction)
	}
	var flags uint32
	var threshold uint32
	if c.AllIPv4 {
		if c.Fraction != 0 || c.OnlyUDPPort != 0 || c.OnlyDestQPN != nil || c.BlackHole || c.Corrupt || c.CorruptOffset != 0 {
			return nil, fmt.Errorf("%w: AllIPv4 takes no other field", ErrConfig)
		}
		flags |= flagAllIPv4
	}
	switch {
	case c.Fraction >= 1:
		flags |= flagAlways
	default:
		threshold = uint32(c.Fraction * (1 << 32))
	}
	if c.BlackHole {
		flags |= flagBlackHole
	}
	if c.Corrupt {
		flags |= flagCorrupt
	}
	var port uint32
	if c.OnlyUDPPort != 0 {
		flags |= flagPort
		port = uint32(uint16(be16(c.OnlyUDPPort)))
	}
	var qpn uint32
	if c.OnlyDestQPN != nil {
		if *c.OnlyDestQPN > 0xffffff {
			return nil, fmt.Errorf("%w: QPN %#x exceeds 24 bits", ErrConfig, *c.OnlyDestQPN)
		}
		flags |= flagQPN
		qpn = *c.OnlyDestQPN
	}
	off := uint32(udpHdrLen) + uint32(c.CorruptOffset&^1)
	var mask [2]byte
	mask[c.CorruptOffset&1] = 0xff
	b := make([]byte, cfgSize)
	binary.NativeEndian.PutUint32(b[cfgFlags:], flags)
	binary.NativeEndian.PutUint32(b[cfgThreshold:], threshold)
	binary.NativeEndian.PutUint32(b[cfgPort:], port)
	binary.NativeEndian.PutUint32(b[cfgQPN:], qpn)
	binary.NativeEndian.PutUint32(b[cfgWordOff:], off)
	binary.NativeEndian.PutUint32(b[cfgXorMask:], uint32(binary.NativeEndian.Uint16(mask[:])))
	return b, nil
}

// Direction is the hook a [Fault] attaches to.
type Direction int

const (
	// Ingress sees packets the interface receives.
	Ingress Direction = iota
	// Egress sees packets the interface sends.
	Egress
)

// Fault is an eBPF program attached (tcx) to one interface, with its
// configuration and counter maps.
type Fault struct {
	cfg  *ebpf.Map
	ctr  *ebpf.Map
	prog *ebpf.Program
	lnk  link.Link

	once sync.Once
	err  error
}

// Drop attaches a fault to the ingress of the interface named iface in
// the calling thread's network namespace; call it inside netns.NS.Do for
// an interface of a test namespace. The eBPF link stays on that
// interface after Do returns.
func Drop(iface string, cfg Config) (*Fault, error) {
	return Attach(iface, Ingress, cfg)
}

// Attach is [Drop] with a choice of direction.
func Attach(iface string, dir Direction, cfg Config) (f *Fault, err error) {
	val, err := cfg.encode()
	if err != nil {
		return nil, err
	}
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("fault: %w", err)
	}
	at := ebpf.AttachTCXIngress
	if dir == Egress {
		at = ebpf.AttachTCXEgress
	}
	f = &Fault{}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	f.cfg, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ucgo_fault_cfg", Type: ebpf.Array, KeySize: 4, ValueSize: cfgSize, MaxEntries: 1})
	if err != nil {
		return nil, fmt.Errorf("fault: config map: %w", err)
	}
	f.ctr, err = ebpf.NewMap(&ebpf.MapSpec{Name: "ucgo_fault_ctr", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: numCounters})
	if err != nil {
		return nil, fmt.Errorf("fault: counter map: %w", err)
	}
	if err := f.cfg.Update(uint32(0), val, ebpf.UpdateAny); err != nil {
		return nil, fmt.Errorf("fault: set config: %w", err)
	}
	f.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "ucgo_fault",
		Type:         ebpf.SchedCLS,
		Instructions: program(f.cfg.FD(), f.ctr.FD()),
		License:      "Dual MIT/GPL",
	})
	if err != nil {
		return nil, fmt.Errorf("fault: load program: %w", err)
	}
	f.lnk, err = link.AttachTCX(link.TCXOptions{Interface: ifi.Index, Program: f.prog, Attach: at})
	if err != nil {
		return nil, fmt.Errorf("fault: attach to %s: %w", iface, err)
	}
	return f, nil
}

// Set replaces the configuration while the program runs; packets in
// flight during the update may see either configuration.
func (f *Fault) Set(cfg Config) error {
	val, err := cfg.encode()
	if err != nil {
		return err
	}
	if err := f.cfg.Update(uint32(0), val, ebpf.UpdateExist); err != nil {
		return fmt.Errorf("fault: set config: %w", err)
	}
	return nil
}

// Stats are the fault's counters, summed over CPUs.
type Stats struct {
	Seen      uint64 // packets that matched the filters
	Dropped   uint64 // of those, dropped
	Corrupted uint64 // of those, corrupted and passed
}

// Stats reads the counters.
func (f *Fault) Stats() (Stats, error) {
	var s Stats
	// the program counts a packet as seen before it drops or corrupts
	// it, so Seen is read last: a snapshot taken while packets pass never
	// shows more dropped or corrupted packets than seen ones
	for _, c := range []struct {
		idx uint32
		dst *uint64
	}{{ctrDropped, &s.Dropped}, {ctrCorrupted, &s.Corrupted}, {ctrSeen, &s.Seen}} {
		var per []uint64
		if err := f.ctr.Lookup(c.idx, &per); err != nil {
			return Stats{}, fmt.Errorf("fault: read counters: %w", err)
		}
		for _, v := range per {
			*c.dst += v
		}
	}
	return s, nil
}

// Counters returns how many packets matched and how many were dropped;
// both are zero if the counters cannot be read.
func (f *Fault) Counters() (seen, dropped uint64) {
	s, _ := f.Stats()
	return s.Seen, s.Dropped
}

// Close detaches the program and frees the maps. It is idempotent.
func (f *Fault) Close() error {
	f.once.Do(func() {
		if f.lnk != nil {
			f.err = multierr.Append(f.err, f.lnk.Close())
		}
		if f.prog != nil {
			f.err = multierr.Append(f.err, f.prog.Close())
		}
		if f.ctr != nil {
			f.err = multierr.Append(f.err, f.ctr.Close())
		}
		if f.cfg != nil {
			f.err = multierr.Append(f.err, f.cfg.Close())
		}
	})
	return f.err
}
