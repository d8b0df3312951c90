package shm

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"go.uber.org/multierr"
	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/fd"
	"github.com/ucgo/ucgo/uct"
)

// OpenMD opens a memory domain.
func (*Component) OpenMD(uct.MDParams) (uct.MD, error) {
	st, err := procStartTime(os.Getpid())
	if err != nil {
		return nil, err
	}
	tfd, tab, err := memfdMap("ucgo-shm-keys", ktLen)
	if err != nil {
		return nil, err
	}
	var rb [8]byte
	rand.Read(rb[:])
	cookie := binary.LittleEndian.Uint64(rb[:])
	ktInit(tab, cookie)
	return &MD{pid: os.Getpid(), start: st, keyFD: fd.New(tfd), keys: tab, cookie: cookie, regs: map[int]*mem{}}, nil
}

// MD is the shm memory domain. It owns the key table (see keytable_linux.go)
// that its ifaces name in their segments, and it keeps every Mem, and so
// the memory behind it, referenced until the Mem is closed.
type MD struct {
	pid    int
	start  uint64
	keyFD  *fd.FD
	keys   []byte
	cookie uint64

	mu     sync.Mutex
	free   []int
	next   int
	gen    uint32
	regs   map[int]*mem // live memory by key slot
	closed bool
	once   sync.Once
	cerr   error
}

// addMem gives x a key slot and publishes its entry.
func (m *MD) addMem(x *mem) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return uct.ErrClosed
	}
	var slot int
	if n := len(m.free); n > 0 {
		slot = m.free[n-1]
		m.free = m.free[:n-1]
	} else if m.next < keySlots {
		slot = m.next
		m.next++
	} else {
		return fmt.Errorf("shm: %d keys live: %w", keySlots, uct.ErrNoResource)
	}
	m.gen++
	if m.gen == 0 {
		m.gen = 1
	}
	x.slot, x.gen = slot, m.gen
	m.regs[slot] = x
	ktPublish(m.keys, slot, keyEntry{gen: x.gen, access: x.access, base: x.Address(), length: uint64(len(x.buf)), fd: x.fd.Int()})
	return nil
}

// dropMem invalidates x's key before its memory goes away.
func (m *MD) dropMem(x *mem) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.regs[x.slot] != x {
		return
	}
	ktClear(m.keys, x.slot)
	delete(m.regs, x.slot)
	m.free = append(m.free, x.slot)
}

// Attr describes the MD.
func (m *MD) Attr() uct.MDAttr {
	return uct.MDAttr{Component: transportName, CanRegister: true, CanAlloc: true, RKeySize: rkeyLen, MaxAlloc: uct.MaxRegion, MaxReg: uct.MaxRegion}
}

// Close invalidates every key of the MD and frees the key table; memory
// still open stays usable locally but no peer reaches it. Ifaces and
// memory own their other resources.
func (m *MD) Close() error {
	m.once.Do(func() {
		m.mu.Lock()
		m.closed = true
		for slot := range m.regs {
			ktClear(m.keys, slot)
		}
		m.regs = nil
		m.mu.Unlock()
		m.cerr = multierr.Combine(unix.Munmap(m.keys), m.keyFD.Close())
	})
	return m.cerr
}

// mem is registered (fd < 0) or allocated memory.
type mem struct {
	md     *MD
	buf    []byte
	fd     *fd.FD // nil for registered memory
	access uct.Access
	slot   int
	gen    uint32
	once   sync.Once
	err    error
}

// Register makes buf reachable through process_vm_readv/writev. The MD
// keeps buf referenced until the Mem is closed.
func (m *MD) Register(buf []byte, access uct.Access) (uct.Mem, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("shm register: empty buffer: %w", uct.ErrInvalidParam)
	}
	x := &mem{md: m, buf: buf, access: access}
	if err := m.addMem(x); err != nil {
		return nil, err
	}
	return x, nil
}

// Alloc allocates a memfd mapping that peers map directly.
func (m *MD) Alloc(size int, access uct.Access) (uct.Mem, error) {
	if size <= 0 {
		return nil, fmt.Errorf("shm alloc: size %d: %w", size, uct.ErrInvalidParam)
	}
	mfd, b, err := memfdMap("ucgo-shm-mem", size)
	if err != nil {
		return nil, err
	}
	x := &mem{md: m, buf: b, fd: fd.New(mfd), access: access}
	if err := m.addMem(x); err != nil {
		unix.Munmap(b)
		x.fd.Close()
		return nil, err
	}
	return x, nil
}

func memfdMap(name string, size int) (int, []byte, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return -1, nil, fmt.Errorf("shm: memfd_create: %w: %w", uct.ErrNoMemory, err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("shm: ftruncate: %w: %w", uct.ErrNoMemory, err)
	}
	b, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("shm: mmap: %w: %w", uct.ErrNoMemory, err)
	}
	return fd, b, nil
}

func (x *mem) Bytes() []byte   { return x.buf }
func (x *mem) Address() uint64 { return sliceAddr(x.buf) }

// rkeyLen is the packed key: magic u32, pid u32, start time u64, MD
// cookie u64, slot u32, generation u32. It names a registration; bounds,
// rights and the memory's fd come from the target's key table.
const rkeyLen = 32

// PackRKey packs the key's identity.
func (x *mem) PackRKey() []byte {
	b := make([]byte, rkeyLen)
	binary.LittleEndian.PutUint32(b[0:], segMagic)
	binary.LittleEndian.PutUint32(b[4:], uint32(x.md.pid))
	binary.LittleEndian.PutUint64(b[8:], x.md.start)
	binary.LittleEndian.PutUint64(b[16:], x.md.cookie)
	binary.LittleEndian.PutUint32(b[24:], uint32(x.slot))
	binary.LittleEndian.PutUint32(b[28:], x.gen)
	return b
}

// Close invalidates the key, then frees allocated memory; the MD drops
// its reference to registered memory.
func (x *mem) Close() error {
	x.once.Do(func() {
		x.md.dropMem(x)
		if x.fd != nil {
			x.err = multierr.Append(unix.Munmap(x.buf), x.fd.Close())
		}
		x.buf = nil
	})
	return x.err
}

// RKey is an unpacked shm remote key. For allocated memory the peer's memfd
// is mapped on first use and kept until Close.
type RKey struct {
	pid    int
	start  uint64
	cookie uint64
	slot   int
	gen    uint32

	mu     sync.Mutex
	mapped atomic.Pointer[[]byte]
	view   atomic.Pointer[keyView] // the last full check (keyview_linux.go)
	closed bool
}

// UnpackRKey decodes a packed key.
func (m *MD) UnpackRKey(b []byte) (uct.RKey, error) {
	if len(b) != rkeyLen || binary.LittleEndian.Uint32(b) != segMagic {
		return nil, fmt.Errorf("shm rkey: malformed (%d bytes): %w", len(b), uct.ErrInvalidParam)
	}
	k := &RKey{
		pid:    int(binary.LittleEndian.Uint32(b[4:])),
		start:  binary.LittleEndian.Uint64(b[8:]),
		cookie: binary.LittleEndian.Uint64(b[16:]),
		slot:   int(binary.LittleEndian.Uint32(b[24:])),
		gen:    binary.LittleEndian.Uint32(b[28:]),
	}
	if k.slot >= keySlots || k.gen == 0 {
		return nil, fmt.Errorf("shm rkey: bad key slot: %w", uct.ErrInvalidParam)
	}
	if k.pid <= 0 || k.pid > 1<<22 {
		return nil, fmt.Errorf("shm rkey: bad pid %d: %w", k.pid, uct.ErrInvalidParam)
	}
	return k, nil
}

// Close unmaps the peer memory if it was mapped.
func (k *RKey) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	k.view.Store(nil)
	if p := k.mapped.Swap(nil); p != nil {
		return unix.Munmap(*p)
	}
	return nil
}

// window checks [raddr, raddr+n) and the rights need against the target's
// key table (reached through ep) and returns the mapped bytes for
// allocated memory, nil for registered memory, or an error wrapping
// uct.ErrRemoteProtection (or uct.ErrPeerFailed).
func (k *RKey) window(ep *Endpoint, raddr uint64, n int, need uct.Access) ([]byte, error) {
	if v := k.view.Load(); v != nil {
		if w, ok := v.lookup(ep, raddr, n, need); ok {
			return w, nil
		}
	}
	tab, err := ep.peerKeys()
	if err != nil {
		return nil, err
	}
	if k.cookie != ep.keys.cookie {
		return nil, fmt.Errorf("shm rkey: key of another memory domain: %w", uct.ErrRemoteProtection)
	}
	e, ok := ktLoad(tab, k.slot, k.gen)
	if !ok {
		return nil, fmt.Errorf("shm: remote memory is not registered (closed or key edited): %w", uct.ErrRemoteProtection)
	}
	if e.access&need != need {
		return nil, fmt.Errorf("shm: remote memory lacks access %#x: %w", need, uct.ErrRemoteProtection)
	}
	if !e.covers(raddr, n) {
		return nil, fmt.Errorf("shm: [%#x, +%d) outside the registered [%#x, +%d): %w", raddr, n, e.base, e.length, uct.ErrRemoteProtection)
	}
	if e.fd < 0 {
		k.setView(ep, tab, e, nil)
		return nil, nil
	}
	p := k.mapped.Load()
	if p == nil {
		if p, err = k.mapMem(ep, e); err != nil {
			return nil, err
		}
		// The fd was read from the entry before it was opened; the entry
		// still holding the generation means the fd was not yet closed
		// (Close clears the entry first), so the mapping is its memory.
		if !ktStillHolds(tab, k.slot, k.gen) {
			return nil, fmt.Errorf("shm: remote memory was closed: %w", uct.ErrRemoteProtection)
		}
	}
	if uint64(len(*p)) != e.length {
		return nil, fmt.Errorf("shm: mapped %d bytes, registration has %d: %w", len(*p), e.length, uct.ErrRemoteProtection)
	}
	k.setView(ep, tab, e, p)
	off := raddr - e.base
	return (*p)[off : off+uint64(n) : off+uint64(n)], nil
}

// mapMem maps the allocated memory of entry e.
func (k *RKey) mapMem(ep *Endpoint, e keyEntry) (*[]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.mapped.Load(); p != nil {
		return p, nil
	}
	if k.closed {
		return nil, uct.ErrClosed
	}
	if e.length > 1<<40 {
		return nil, fmt.Errorf("shm: registration of %d bytes: %w", e.length, uct.ErrRemoteProtection)
	}
	b, err := mapProcFD(k.pid, e.fd, int(e.length), unix.PROT_READ|unix.PROT_WRITE)
	if err != nil {
		return nil, ep.gone(err)
	}
	k.mapped.Store(&b)
	return &b, nil
}

func mapProcFD(pid, fd, size, prot int) ([]byte, error) {
	mode := unix.O_RDWR
	if prot&unix.PROT_WRITE == 0 {
		mode = unix.O_RDONLY
	}
	f, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(fd), mode|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: open peer memory: %w: %w", uct.ErrRemoteProtection, err)
	}
	defer unix.Close(f)
	var sb unix.Stat_t
	if err := unix.Fstat(f, &sb); err != nil || sb.Size < int64(size) {
		return nil, fmt.Errorf("shm: peer fd %d is not the registered memory: %w", fd, uct.ErrRemoteProtection)
	}
	b, err := unix.Mmap(f, 0, size, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: map peer memory: %w: %w", uct.ErrRemoteProtection, err)
	}
	return b, nil
}
