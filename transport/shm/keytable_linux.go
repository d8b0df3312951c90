package shm

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/uct"
)

// The key table is the target's registration table: one entry per live
// Mem of an MD (key id = slot, generation, base, length, rights, and the
// memfd of allocated memory). Only the owning MD writes it; every iface of
// the MD names the table in its segment header, and initiators map it
// read-only through /proc/PID/fd. An initiator checks each RMA against the
// entry the key names, never against bounds or rights carried in the key,
// so a key whose bytes were edited, or whose memory was deregistered,
// reaches nothing outside a live registration.
//
// Layout (little endian): a 64-byte header (magic, version, slots, the
// MD's random cookie) followed by keySlots entries of 32 bytes:
//
//	0  gen    u32  0 = free; written last when an entry is published
//	4  access u32
//	8  base   u64
//	16 length u64
//	24 fd     i32  memfd of allocated memory, -1 for registered memory
//
// A reader loads gen, the fields, and gen again: generations are unique
// per MD, so equal loads around the fields mean the fields belong to that
// registration.
const (
	ktMagic   = 0x544b4355 // "UCKT"
	ktVersion = 1
	ktHdr     = 64
	ktEntry   = 32
	keySlots  = 1 << 16
	ktLen     = ktHdr + keySlots*ktEntry

	ktOffMagic   = 0
	ktOffVersion = 4
	ktOffSlots   = 8
	ktOffCookie  = 16

	keGen    = 0
	keAccess = 4
	keBase   = 8
	keLength = 16
	keFD     = 24
)

// keyEntry is one registration as the table holds it.
type keyEntry struct {
	gen    uint32
	access uct.Access
	base   uint64
	length uint64
	fd     int
}

func ktInit(tab []byte, cookie uint64) {
	binary.LittleEndian.PutUint32(tab[ktOffMagic:], ktMagic)
	binary.LittleEndian.PutUint32(tab[ktOffVersion:], ktVersion)
	binary.LittleEndian.PutUint32(tab[ktOffSlots:], keySlots)
	binary.LittleEndian.PutUint64(tab[ktOffCookie:], cookie)
}

// ktCheck validates a mapped peer table against the cookie its iface's
// segment header announced. Errors wrap uct.ErrRemoteProtection.
func ktCheck(tab []byte, cookie uint64) error {
	if len(tab) < ktLen {
		return fmt.Errorf("shm key table: %d bytes, want %d: %w", len(tab), ktLen, uct.ErrRemoteProtection)
	}
	if binary.LittleEndian.Uint32(tab[ktOffMagic:]) != ktMagic ||
		binary.LittleEndian.Uint32(tab[ktOffVersion:]) != ktVersion ||
		binary.LittleEndian.Uint32(tab[ktOffSlots:]) != keySlots {
		return fmt.Errorf("shm key table: bad header: %w", uct.ErrRemoteProtection)
	}
	if c := binary.LittleEndian.Uint64(tab[ktOffCookie:]); c != cookie {
		return fmt.Errorf("shm key table: cookie %#x, segment says %#x: %w", c, cookie, uct.ErrRemoteProtection)
	}
	return nil
}

func keOff(slot int) int { return ktHdr + slot*ktEntry }

// ktPublish writes e into slot; gen goes last.
func ktPublish(tab []byte, slot int, e keyEntry) {
	o := keOff(slot)
	storeU32(tab, o+keGen, 0)
	storeU32(tab, o+keAccess, uint32(e.access))
	atomic.StoreUint64(u64at(tab, o+keBase), e.base)
	atomic.StoreUint64(u64at(tab, o+keLength), e.length)
	storeU32(tab, o+keFD, uint32(int32(e.fd)))
	storeU32(tab, o+keGen, e.gen)
}

// ktClear invalidates slot.
func ktClear(tab []byte, slot int) { storeU32(tab, keOff(slot)+keGen, 0) }

// ktLoad returns the entry of slot if it holds generation gen.
func ktLoad(tab []byte, slot int, gen uint32) (keyEntry, bool) {
	if slot < 0 || slot >= keySlots || gen == 0 {
		return keyEntry{}, false
	}
	o := keOff(slot)
	if loadU32(tab, o+keGen) != gen {
		return keyEntry{}, false
	}
	e := keyEntry{
		gen:    gen,
		access: uct.Access(loadU32(tab, o+keAccess)),
		base:   atomic.LoadUint64(u64at(tab, o+keBase)),
		length: atomic.LoadUint64(u64at(tab, o+keLength)),
		fd:     int(int32(loadU32(tab, o+keFD))),
	}
	if loadU32(tab, o+keGen) != gen {
		return keyEntry{}, false
	}
	return e, true
}

// ktStillHolds reports whether slot still holds generation gen.
func ktStillHolds(tab []byte, slot int, gen uint32) bool {
	return loadU32(tab, keOff(slot)+keGen) == gen
}

// covers reports whether [raddr, raddr+n) lies inside the entry's region.
func (e keyEntry) covers(raddr uint64, n int) bool {
	if n < 0 || raddr < e.base {
		return false
	}
	off := raddr - e.base
	return off <= e.length && uint64(n) <= e.length-off
}

// peerKeyTable is an endpoint's read-only mapping of its peer MD's key
// table, named by the peer's segment header and mapped on the first RMA.
type peerKeyTable struct {
	fd     int // the table's fd in the peer process
	cookie uint64

	mu     sync.Mutex
	tab    atomic.Pointer[[]byte]
	closed bool
}

// peerKeys returns the peer's key table, mapping it on first use.
func (ep *Endpoint) peerKeys() ([]byte, error) {
	if p := ep.keys.tab.Load(); p != nil {
		return *p, nil
	}
	pk := &ep.keys
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if p := pk.tab.Load(); p != nil {
		return *p, nil
	}
	if pk.closed {
		return nil, uct.ErrClosed
	}
	tab, err := mapProcFD(ep.peer.PID, pk.fd, ktLen, unix.PROT_READ)
	if err != nil {
		return nil, ep.gone(err)
	}
	if err := ktCheck(tab, pk.cookie); err != nil {
		unix.Munmap(tab)
		return nil, err
	}
	pk.tab.Store(&tab)
	return tab, nil
}

// close unmaps the table; idempotent.
func (pk *peerKeyTable) close() error {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	pk.closed = true
	if p := pk.tab.Swap(nil); p != nil {
		return unix.Munmap(*p)
	}
	return nil
}

// gone turns err, a failure to reach the peer's memory, into
// uct.ErrPeerFailed if the peer process has exited or is exiting (a
// SIGKILLed process loses its fds before it becomes a zombie).
func (ep *Endpoint) gone(err error) error {
	pid := ep.peer.PID
	if st, e := procStartTime(pid); e != nil || st != ep.peer.StartTime || !processAlive(pid) || processExiting(pid) {
		return fmt.Errorf("shm: process %d gone: %w", pid, uct.ErrPeerFailed)
	}
	return err
}
