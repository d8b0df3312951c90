package verbs

import (
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// Access are memory and QP access flags (ibv_access_flags).
type Access uint32

const (
	AccessLocalWrite   Access = 1 << 0
	AccessRemoteWrite  Access = 1 << 1
	AccessRemoteRead   Access = 1 << 2
	AccessRemoteAtomic Access = 1 << 3
)

const accessAll = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic

// PD is a protection domain (ibv_pd). MRs and QPs of one PD work
// together; a QP cannot use another PD's MR.
type PD struct {
	d      *Device
	closed bool
	nobj   int // MRs, QPs and SRQs using it
}

// AllocPD allocates a protection domain.
func (d *Device) AllocPD() (*PD, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("verbs: alloc pd: %w", uct.ErrClosed)
	}
	return &PD{d: d}, nil
}

// Close deallocates the PD (ibv_dealloc_pd); it fails with ErrBusy while
// MRs, QPs or SRQs use it.
func (pd *PD) Close() error {
	pd.d.mu.Lock()
	defer pd.d.mu.Unlock()
	if pd.nobj > 0 {
		return fmt.Errorf("verbs: dealloc pd: %d objects still use it: %w", pd.nobj, uct.ErrBusy)
	}
	pd.closed = true
	return nil
}

// MR is a registered memory region (ibv_mr). Its memory is the byte slice
// given to RegMR; addresses on the wire are virtual addresses inside it
// ([MR.Addr] + offset), as with ibv_reg_mr.
type MR struct {
	pd     *PD
	buf    []byte
	addr   uint64
	key    uint32
	access Access
	dereg  bool
}

// RegMR registers buf with the given access rights. Remote write and
// remote atomic need local write, as in ibv_reg_mr. The MR keeps buf
// referenced until Dereg.
func (pd *PD) RegMR(buf []byte, access Access) (*MR, error) {
	if access&^accessAll != 0 {
		return nil, fmt.Errorf("verbs: reg mr: unknown access bits %#x: %w", uint32(access&^accessAll), uct.ErrInvalidParam)
	}
	if access&(AccessRemoteWrite|AccessRemoteAtomic) != 0 && access&AccessLocalWrite == 0 {
		return nil, fmt.Errorf("verbs: reg mr: remote write/atomic needs local write: %w", uct.ErrInvalidParam)
	}
	d := pd.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || pd.closed {
		return nil, fmt.Errorf("verbs: reg mr: %w", uct.ErrClosed)
	}
	mr := &MR{pd: pd, buf: buf, addr: addrOf(buf), access: access}
	d.keySeq++
	mr.key = d.keySeq<<8 | uint32(d.rand()&0xff)
	d.mrs[mr.key>>8] = mr
	pd.nobj++
	return mr, nil
}

// LKey returns the local key.
func (mr *MR) LKey() uint32 { return mr.key }

// RKey returns the remote key.
func (mr *MR) RKey() uint32 { return mr.key }

// Addr returns the virtual address of the region's first byte.
func (mr *MR) Addr() uint64 { return mr.addr }

// Len returns the region's length.
func (mr *MR) Len() int { return len(mr.buf) }

// Bytes returns the registered memory.
func (mr *MR) Bytes() []byte { return mr.buf }

// SGE returns the scatter/gather element for n bytes at offset off.
func (mr *MR) SGE(off, n int) SGE {
	return SGE{Addr: mr.addr + uint64(off), Length: uint32(n), LKey: mr.key}
}

// Dereg deregisters the region; later accesses with its keys fail.
func (mr *MR) Dereg() error {
	d := mr.pd.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if mr.dereg {
		return nil
	}
	mr.dereg = true
	delete(d.mrs, mr.key>>8)
	mr.pd.nobj--
	return nil
}

// lookupMR finds the MR of key in pd covering [va, va+n) with the access
// rights need. It returns the MR and the offset of va in it.
func (d *Device) lookupMR(pd *PD, key uint32, va uint64, n uint64, need Access) (*MR, uint64, bool) {
	mr := d.mrs[key>>8]
	if mr == nil || mr.key != key || mr.pd != pd || mr.access&need != need {
		return nil, 0, false
	}
	if va < mr.addr || n > uint64(len(mr.buf)) || va-mr.addr > uint64(len(mr.buf))-n {
		return nil, 0, false
	}
	return mr, va - mr.addr, true
}

// resolveSGEs checks every SGE against the PD's MRs with rights need and
// returns the backing slices (nil, false on a bad key or range).
func (d *Device) resolveSGEs(pd *PD, sg []SGE, need Access, out [][]byte) ([][]byte, bool) {
	out = out[:0]
	for _, s := range sg {
		if s.Length == 0 {
			out = append(out, nil)
			continue
		}
		mr, off, ok := d.lookupMR(pd, s.LKey, s.Addr, uint64(s.Length), need)
		if !ok {
			return out, false
		}
		out = append(out, mr.buf[off:off+uint64(s.Length)])
	}
	return out, true
}

// gather copies from the resolved segments starting at byte pos into dst.
func gather(dst []byte, segs [][]byte, pos uint64) {
	for _, s := range segs {
		if len(dst) == 0 {
			return
		}
		if pos >= uint64(len(s)) {
			pos -= uint64(len(s))
			continue
		}
		n := copy(dst, s[pos:])
		dst = dst[n:]
		pos = 0
	}
}

// scatter copies src into the resolved segments starting at byte pos.
func scatter(segs [][]byte, pos uint64, src []byte) {
	for _, s := range segs {
		if len(src) == 0 {
			return
		}
		if pos >= uint64(len(s)) {
			pos -= uint64(len(s))
			continue
		}
		n := copy(s[pos:], src)
		src = src[n:]
		pos = 0
	}
}

func sgLen(sg []SGE) uint64 {
	var n uint64
	for _, s := range sg {
		n += uint64(s.Length)
	}
	return n
}
