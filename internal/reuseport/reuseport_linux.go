package reuseport

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"go.uber.org/multierr"
	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/fd"
)

// BPFFS is where bpffs is expected (and mounted if absent).
const BPFFS = "/sys/fs/bpf"

// PinRoot holds one directory of pins per group.
const PinRoot = BPFFS + "/ucgo"

// Slots is the size of the socket array: one slot per value of the top
// byte of a 24-bit QPN. Slot 0 (QPNs 0 to 0xffff, including the special
// QPs 0 and 1) is never claimed.
const Slots = 256

// ErrUnavailable is wrapped by Listen errors that mean eBPF steering is
// not possible here (no privileges, no bpffs, kernel without the program
// or map type). The caller should fall back to a UDP port of its own.
var ErrUnavailable = errors.New("reuseport: eBPF socket steering unavailable")

// ErrFull is wrapped when all slots 1..255 of the group are taken.
var ErrFull = errors.New("reuseport: all slots taken")

// bthDestQPOffset is where the program reads the slot byte: from the
// start of sk_reuseport_md data, which for UDP is the UDP header, skip it
// (8 bytes) and go to BTH byte 5, the top byte of DestQP.
const bthDestQPOffset = 8 + 5

// SlotOf returns the slot that owns a QPN.
func SlotOf(qpn uint32) uint8 { return uint8(qpn >> 16) }

// Member is one socket of a group sharing a UDP address, owning the QPNs
// of one slot.
type Member struct {
	fd   *fd.FD // non-blocking, not in Go's network poller
	slot uint8
	dir  string

	connOnce sync.Once
	conn     *net.UDPConn // made by Conn on first use

	once sync.Once
	err  error
}

// FD is the member's socket: non-blocking, close-on-exec and not
// registered with Go's network poller, so a caller that polls it itself
// (recvmmsg from a progress loop) pays for no poller wake-up per packet.
// It stays valid until Close; do not close it.
func (m *Member) FD() int { return m.fd.Int() }

// Conn is the member's socket as a net.UDPConn (a descriptor of its own
// for the same socket, in Go's network poller), made on the first call;
// nil if the descriptor could not be duplicated. Do not close it; use
// Close.
func (m *Member) Conn() *net.UDPConn {
	m.connOnce.Do(func() {
		nfd, err := unix.FcntlInt(uintptr(m.fd.Int()), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return
		}
		f := os.NewFile(uintptr(nfd), "reuseport")
		pc, err := net.FilePacketConn(f)
		f.Close()
		if err != nil {
			return
		}
		m.conn, _ = pc.(*net.UDPConn)
	})
	return m.conn
}

// Slot is the member's slot, 1..255.
func (m *Member) Slot() uint8 { return m.slot }

// QPNRange is the range of QPNs that reach this member: slot<<16 up to
// slot<<16 | 0xffff.
func (m *Member) QPNRange() (first, last uint32) {
	return uint32(m.slot) << 16, uint32(m.slot)<<16 | 0xffff
}

// Dir is the bpffs directory holding the group's pinned map and program.
func (m *Member) Dir() string { return m.dir }

func unavailable(err error) error {
	if errors.Is(err, ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// isPermission reports errors that mean "not allowed or not supported
// here" rather than "something broke".
func isPermission(err error) bool {
	return errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) ||
		errors.Is(err, unix.ENOSYS) || errors.Is(err, ebpf.ErrNotSupported) ||
		errors.Is(err, unix.EROFS)
}

func classify(err error) error {
	if isPermission(err) {
		return unavailable(err)
	}
	return err
}

// groupDir names the pin directory of the group for addr in the calling
// thread's network namespace.
func groupDir(addr netip.AddrPort) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
		return "", fmt.Errorf("reuseport: network namespace: %w", err)
	}
	// bpffs refuses names with dots ("reserved for the kernel").
	ip := strings.NewReplacer(".", "_", ":", "_").Replace(addr.Addr().String())
	return filepath.Join(PinRoot, fmt.Sprintf("reuseport-v1-%d-%s-%d", st.Ino, ip, addr.Port())), nil
}

// ensureBPFFS mounts bpffs at BPFFS unless it is there; lockDir
// serialises concurrent mounters.
func ensureBPFFS() error {
	isBPF := func() (bool, error) {
		var sfs unix.Statfs_t
		if err := unix.Statfs(BPFFS, &sfs); err != nil {
			return false, err
		}
		return uint32(sfs.Type) == unix.BPF_FS_MAGIC, nil
	}
	ok, err := isBPF()
	if err != nil {
		return unavailable(fmt.Errorf("bpffs: %w", err))
	}
	if ok {
		return nil
	}
	unlock, err := lockPath(BPFFS)
	if err != nil {
		return unavailable(err)
	}
	defer unlock()
	if ok, err := isBPF(); err != nil || ok {
		return err
	}
	if err := unix.Mount("bpf", BPFFS, "bpf", 0, "mode=0700"); err != nil {
		return unavailable(fmt.Errorf("mount bpffs at %s: %w", BPFFS, err))
	}
	return nil
}

// lockPath takes an exclusive flock on a directory.
func lockPath(dir string) (unlock func(), err error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("reuseport: open %s: %w", dir, err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("reuseport: lock %s: %w", dir, err)
	}
	return func() {
		unix.Flock(fd, unix.LOCK_UN)
		unix.Close(fd)
	}, nil
}

// program steers by the top byte of BTH DestQP:
//
//	if bpf_skb_load_bytes(ctx, 13, &b, 1) == 0:
//	    key = b
//	    bpf_sk_select_reuseport(ctx, socks, &key, 0)  // on error: kernel's choice
//	return SK_PASS
func program(socks *ebpf.Map) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.Mov.Imm(asm.R2, bthDestQPOffset),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -8),
		asm.Mov.Imm(asm.R4, 1),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "pass"),
		asm.LoadMem(asm.R1, asm.RFP, -8, asm.Byte),
		asm.StoreMem(asm.RFP, -4, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.LoadMapPtr(asm.R2, socks.FD()),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -4),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnSkSelectReuseport.Call(),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("pass"), // SK_PASS
		asm.Return(),
	}
}

// openGroup loads the group's pinned map and program, or creates and pins
// them. The caller holds the PinRoot lock.
func openGroup(dir string) (socks *ebpf.Map, prog *ebpf.Program, err error) {
	mapPath, progPath := filepath.Join(dir, "socks"), filepath.Join(dir, "prog")
	socks, err = ebpf.LoadPinnedMap(mapPath, nil)
	if err == nil {
		prog, err = ebpf.LoadPinnedProgram(progPath, nil)
		if err == nil {
			info, ierr := socks.Info()
			if ierr == nil && info.Type == ebpf.ReusePortSockArray && info.MaxEntries == Slots {
				return socks, prog, nil
			}
			prog.Close()
		}
		socks.Close()
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, classify(fmt.Errorf("reuseport: load pins in %s: %w", dir, err))
	}
	// Missing or half-made (a crash between the two pins): start over.
	os.Remove(mapPath)
	os.Remove(progPath)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, classify(fmt.Errorf("reuseport: %w", err))
	}
	socks, err = ebpf.NewMap(&ebpf.MapSpec{
		Name:       "ucgo_rp_socks",
		Type:       ebpf.ReusePortSockArray,
		KeySize:    4,
		ValueSize:  8,
		MaxEntries: Slots,
	})
	if err != nil {
		return nil, nil, classify(fmt.Errorf("reuseport: create socket array: %w", err))
	}
	defer func() {
		if err != nil {
			socks.Close()
			if prog != nil {
				prog.Close()
			}
			os.Remove(mapPath)
			os.Remove(progPath)
		}
	}()
	prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "ucgo_rp_select",
		Type:         ebpf.SkReuseport,
		AttachType:   ebpf.AttachSkReuseportSelect,
		Instructions: program(socks),
		License:      "Dual MIT/GPL",
	})
	if err != nil {
		return nil, nil, classify(fmt.Errorf("reuseport: load program: %w", err))
	}
	if err = socks.Pin(mapPath); err != nil {
		return nil, nil, classify(fmt.Errorf("reuseport: pin: %w", err))
	}
	if err = prog.Pin(progPath); err != nil {
		return nil, nil, classify(fmt.Errorf("reuseport: pin: %w", err))
	}
	return socks, prog, nil
}

// Listen binds a UDP socket to addr with SO_REUSEPORT, joins the group of
// sockets on addr in the calling thread's network namespace (creating it
// if needed) and claims the lowest free slot. Datagrams whose BTH DestQP
// has top byte s go to the member of slot s; datagrams for unclaimed
// slots, or too short to carry a BTH, go where the kernel's hash sends
// them, possibly to any member. addr must have a port.
//
// Errors wrapping [ErrUnavailable] mean steering cannot work here.
func Listen(addr netip.AddrPort) (*Member, error) {
	if !addr.IsValid() || addr.Port() == 0 {
		return nil, fmt.Errorf("reuseport: address %v needs an IP and a port", addr)
	}
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	if err := ensureBPFFS(); err != nil {
		return nil, err
	}
	if err := os.Mkdir(PinRoot, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, classify(fmt.Errorf("reuseport: %w", err))
	}
	dir, err := groupDir(addr)
	if err != nil {
		return nil, err
	}
	unlock, err := lockPath(PinRoot)
	if err != nil {
		return nil, classify(err)
	}
	defer unlock()
	sweep(dir)
	socks, prog, err := openGroup(dir)
	if err != nil {
		return nil, err
	}
	defer socks.Close()
	defer prog.Close()
	m, err := join(addr, dir, socks, prog)
	if err != nil {
		// Do not leave the pins of a group that has no member.
		return nil, multierr.Append(err, removeIfEmpty(dir))
	}
	return m, nil
}

// sweep removes the pins of every group but keep whose socket array is
// empty: groups whose last member died without Close (SIGKILL), often in
// a network namespace that is gone. The caller holds the PinRoot lock, so
// no Listen is between creating a group and claiming its first slot.
func sweep(keep string) {
	ents, err := os.ReadDir(PinRoot)
	if err != nil {
		return
	}
	for _, e := range ents {
		dir := filepath.Join(PinRoot, e.Name())
		if dir == keep || !e.IsDir() || !strings.HasPrefix(e.Name(), "reuseport-v1-") {
			continue
		}
		_ = removeIfEmpty(dir) // best effort: a later Listen tries again
	}
}

// join binds addr with SO_REUSEPORT, attaches prog and claims a slot in
// socks. The caller holds the PinRoot lock.
func join(addr netip.AddrPort, dir string, socks *ebpf.Map, prog *ebpf.Program) (*Member, error) {
	n, err := bindReusePort(addr)
	if err != nil {
		return nil, err
	}
	m := &Member{fd: fd.New(n), dir: dir}
	var claimErr error
	if err := unix.SetsockoptInt(n, unix.SOL_SOCKET, unix.SO_ATTACH_REUSEPORT_EBPF, prog.FD()); err != nil {
		claimErr = classify(fmt.Errorf("reuseport: attach program: %w", err))
	} else {
		claimErr = fmt.Errorf("%w in %s", ErrFull, dir)
		for s := 1; s < Slots; s++ {
			err := socks.Update(uint32(s), uint64(n), ebpf.UpdateNoExist)
			if err == nil {
				m.slot = uint8(s)
				claimErr = nil
				break
			}
			if !errors.Is(err, ebpf.ErrKeyExist) {
				claimErr = classify(fmt.Errorf("reuseport: claim slot %d: %w", s, err))
				break
			}
		}
	}
	if claimErr != nil {
		m.fd.Close()
		return nil, claimErr
	}
	return m, nil
}

// bindReusePort returns a non-blocking UDP socket with SO_REUSEPORT bound
// to addr.
func bindReusePort(addr netip.AddrPort) (int, error) {
	var family int
	var sa unix.Sockaddr
	if ip := addr.Addr(); ip.Is4() {
		family, sa = unix.AF_INET, &unix.SockaddrInet4{Port: int(addr.Port()), Addr: ip.As4()}
	} else {
		family, sa = unix.AF_INET6, &unix.SockaddrInet6{Port: int(addr.Port()), Addr: ip.As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("reuseport: socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("reuseport: SO_REUSEPORT: %w", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("reuseport: bind %s: %w", addr, err)
	}
	return fd, nil
}

// Close closes the socket, which frees the slot (the kernel drops a closed
// socket from the array), and removes the group's pins when no member is
// left. It is idempotent.
func (m *Member) Close() error {
	m.once.Do(func() {
		// Both descriptors first: the socket leaves the array only when
		// its last descriptor is closed.
		if m.conn != nil {
			m.err = m.conn.Close()
		}
		m.err = multierr.Append(m.err, m.fd.Close())
		unlock, err := lockPath(PinRoot)
		if err != nil {
			m.err = multierr.Append(m.err, err)
			return
		}
		defer unlock()
		m.err = multierr.Append(m.err, removeIfEmpty(m.dir))
	})
	return m.err
}

// removeIfEmpty deletes the group's pins if its socket array holds no
// socket. The caller holds the PinRoot lock.
func removeIfEmpty(dir string) error {
	socks, err := ebpf.LoadPinnedMap(filepath.Join(dir, "socks"), nil)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reuseport: %w", err)
	}
	defer socks.Close()
	var cookie uint64
	for s := uint32(0); s < Slots; s++ {
		err := socks.Lookup(s, &cookie)
		if err == nil {
			return nil // still in use
		}
		if !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("reuseport: look up slot %d: %w", s, err)
		}
	}
	return multierr.Combine(
		ignoreNotExist(os.Remove(filepath.Join(dir, "prog"))),
		ignoreNotExist(os.Remove(filepath.Join(dir, "socks"))),
		ignoreNotExist(os.Remove(dir)),
	)
}

func ignoreNotExist(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
