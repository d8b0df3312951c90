package shm

import (
	"encoding/binary"
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

const (
	segMagic   = 0x48534355 // "UCSH"
	segVersion = 5
	addrLen    = 32
)

// Address is a decoded iface address.
type Address struct {
	PID       int
	FD        int
	StartTime uint64
	Cookie    uint64
}

func (a Address) pack() []byte {
	b := make([]byte, addrLen)
	binary.LittleEndian.PutUint32(b[0:], segMagic)
	binary.LittleEndian.PutUint16(b[4:], segVersion)
	binary.LittleEndian.PutUint32(b[8:], uint32(a.PID))
	binary.LittleEndian.PutUint32(b[12:], uint32(a.FD))
	binary.LittleEndian.PutUint64(b[16:], a.StartTime)
	binary.LittleEndian.PutUint64(b[24:], a.Cookie)
	return b
}

// DecodeAddress parses a packed iface address. Errors wrap
// uct.ErrInvalidAddress.
func DecodeAddress(b []byte) (Address, error) {
	if len(b) != addrLen {
		return Address{}, fmt.Errorf("shm address: length %d, want %d: %w", len(b), addrLen, uct.ErrInvalidAddress)
	}
	if m := binary.LittleEndian.Uint32(b[0:]); m != segMagic {
		return Address{}, fmt.Errorf("shm address: bad magic %#x: %w", m, uct.ErrInvalidAddress)
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != segVersion {
		return Address{}, fmt.Errorf("shm address: version %d, want %d: %w", v, segVersion, uct.ErrInvalidAddress)
	}
	a := Address{
		PID:       int(binary.LittleEndian.Uint32(b[8:])),
		FD:        int(binary.LittleEndian.Uint32(b[12:])),
		StartTime: binary.LittleEndian.Uint64(b[16:]),
		Cookie:    binary.LittleEndian.Uint64(b[24:]),
	}
	if a.PID <= 0 || a.PID > 1<<22 || a.FD < 0 || a.FD > 1<<20 {
		return Address{}, fmt.Errorf("shm address: pid %d fd %d out of range: %w", a.PID, a.FD, uct.ErrInvalidAddress)
	}
	return a, nil
}

// segment header layout (little endian, in the first page of a segment).
const (
	hdrMagic     = 0
	hdrVersion   = 4
	hdrPID       = 8
	hdrCells     = 12
	hdrStart     = 16
	hdrCookie    = 24
	hdrCellSize  = 32
	hdrBufSize   = 36
	hdrKeyFD     = 40  // fd of the owner MD's key table
	hdrKeyCookie = 48  // the key table's cookie
	hdrTail      = 64  // producers' reservation counter (own cache line)
	hdrFutex     = 128 // futex word (own cache line)
	hdrWaiting   = 132 // receiver sleeps (set by Arm)
	hdrClosed    = 136 // owner closed the iface
	hdrDisabled  = 192 // owner's device is down or RDMA-disabled (own cache line)
	hdrFreed     = 256 // rounds the receiver has handed back to the producers (own cache line)
	hdrSize      = 4096
	cellSize     = 128
	cellHdr      = 24
	cellSrc      = 16 // the sender iface's AM source (pid<<32 | segment fd)
	inlineMax    = cellSize - cellHdr
	defaultCells = 256
	bufSize      = 8192 + 64    // an 8 KiB message and ucp's headers fit one buffer
	bufStride    = bufSize + 64 // see segLen
)

// segHeader is the decoded constant part of a segment header.
type segHeader struct {
	PID       int
	Cells     int
	StartTime uint64
	Cookie    uint64
	CellSize  int
	BufSize   int
	KeyFD     int
	KeyCookie uint64
}

func encodeHeader(b []byte, h segHeader) {
	binary.LittleEndian.PutUint32(b[hdrMagic:], segMagic)
	binary.LittleEndian.PutUint16(b[hdrVersion:], segVersion)
	binary.LittleEndian.PutUint32(b[hdrPID:], uint32(h.PID))
	binary.LittleEndian.PutUint32(b[hdrCells:], uint32(h.Cells))
	binary.LittleEndian.PutUint64(b[hdrStart:], h.StartTime)
	binary.LittleEndian.PutUint64(b[hdrCookie:], h.Cookie)
	binary.LittleEndian.PutUint32(b[hdrCellSize:], uint32(h.CellSize))
	binary.LittleEndian.PutUint32(b[hdrBufSize:], uint32(h.BufSize))
	binary.LittleEndian.PutUint32(b[hdrKeyFD:], uint32(h.KeyFD))
	binary.LittleEndian.PutUint64(b[hdrKeyCookie:], h.KeyCookie)
}

// The segment: the header page, the cells' claim words (8 bytes each,
// rounded up to a cache line), the cells, and one bcopy buffer per cell.
// The buffers lie bufStride apart, a cache line more than their size:
// at a multiple of 4 KiB apart, the first lines of every buffer would
// fall into the same sets of the processor's caches, and a few hundred
// buffers in use in turn would keep evicting each other.
func segLen(cells int) int { return cellsOff(cells) + cells*cellSize + cells*bufStride }

// cellsOff is the offset of the first cell.
func cellsOff(cells int) int { return hdrSize + (cells*8+63)&^63 }

// decodeHeader checks a segment header of a mapping of size total. Errors
// wrap uct.ErrInvalidAddress.
func decodeHeader(b []byte, total int) (segHeader, error) {
	if len(b) < hdrSize {
		return segHeader{}, fmt.Errorf("shm segment: %d bytes, too short for header: %w", len(b), uct.ErrInvalidAddress)
	}
	if m := binary.LittleEndian.Uint32(b[hdrMagic:]); m != segMagic {
		return segHeader{}, fmt.Errorf("shm segment: bad magic %#x: %w", m, uct.ErrInvalidAddress)
	}
	if v := binary.LittleEndian.Uint16(b[hdrVersion:]); v != segVersion {
		return segHeader{}, fmt.Errorf("shm segment: version %d, want %d: %w", v, segVersion, uct.ErrInvalidAddress)
	}
	h := segHeader{
		PID:       int(binary.LittleEndian.Uint32(b[hdrPID:])),
		Cells:     int(binary.LittleEndian.Uint32(b[hdrCells:])),
		StartTime: binary.LittleEndian.Uint64(b[hdrStart:]),
		Cookie:    binary.LittleEndian.Uint64(b[hdrCookie:]),
		CellSize:  int(binary.LittleEndian.Uint32(b[hdrCellSize:])),
		BufSize:   int(binary.LittleEndian.Uint32(b[hdrBufSize:])),
		KeyFD:     int(binary.LittleEndian.Uint32(b[hdrKeyFD:])),
		KeyCookie: binary.LittleEndian.Uint64(b[hdrKeyCookie:]),
	}
	if h.KeyFD < 0 || h.KeyFD > 1<<20 {
		return segHeader{}, fmt.Errorf("shm segment: key table fd %d out of range: %w", h.KeyFD, uct.ErrInvalidAddress)
	}
	if h.CellSize != cellSize || h.BufSize != bufSize {
		return segHeader{}, fmt.Errorf("shm segment: cell %d/buf %d, want %d/%d: %w", h.CellSize, h.BufSize, cellSize, bufSize, uct.ErrInvalidAddress)
	}
	if h.Cells <= 0 || h.Cells > 1<<16 || h.Cells&(h.Cells-1) != 0 {
		return segHeader{}, fmt.Errorf("shm segment: %d cells, want a power of two <= 65536: %w", h.Cells, uct.ErrInvalidAddress)
	}
	if segLen(h.Cells) > total {
		return segHeader{}, fmt.Errorf("shm segment: %d bytes, header needs %d: %w", total, segLen(h.Cells), uct.ErrInvalidAddress)
	}
	return h, nil
}
