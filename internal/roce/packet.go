package roce

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
)

// Port is the IANA UDP destination port of RoCEv2.
const Port = 4791

// Header lengths in bytes.
const (
	BTHLen          = 12 // base transport header
	RETHLen         = 16 // RDMA extended transport header
	AETHLen         = 4  // ACK extended transport header
	AtomicETHLen    = 28 // atomic extended transport header
	AtomicAckETHLen = 8  // atomic ACK extended transport header
	ImmLen          = 4  // immediate data
	IETHLen         = 4  // invalidate extended transport header
	ICRCLen         = 4  // invariant CRC trailer

	// MaxHeaderLen is the longest header any supported opcode has
	// (BTH+AtomicETH), excluding the ICRC.
	MaxHeaderLen = BTHLen + AtomicETHLen
)

// PKeyDefault is the default partition key (full member), the only one
// rxe and most RoCE deployments use.
const PKeyDefault = 0xffff

// Errors returned by [Decode] and [CheckICRC]. Every error Decode returns
// matches ErrMalformed; an unsupported transport, opcode or header
// version additionally matches ErrUnsupported.
var (
	ErrMalformed   = errors.New("roce: malformed packet")
	ErrUnsupported = errors.New("roce: unsupported packet")
	ErrBadICRC     = errors.New("roce: bad ICRC")
)

// BTH is the base transport header.
type BTH struct {
	Opcode         Opcode
	SolicitedEvent bool
	MigReq         bool
	PadCount       uint8 // 0..3; [Append] computes it from the payload length
	TVer           uint8 // transport header version, 0
	PKey           uint16
	DestQP         uint32 // 24 bits
	AckReq         bool
	PSN            uint32 // 24 bits
}

// RETH is the RDMA extended transport header (WRITE FIRST/ONLY, READ REQUEST).
type RETH struct {
	VA     uint64
	RKey   uint32
	DMALen uint32
}

// AtomicETH is the atomic extended transport header (COMPARE SWAP, FETCH ADD).
// For FETCH ADD, SwapAdd is the addend and Compare is unused (sent as 0
// by convention, carried as given).
type AtomicETH struct {
	VA      uint64
	RKey    uint32
	SwapAdd uint64
	Compare uint64
}

// Packet is one RoCEv2 RC packet: the UDP payload without the ICRC. Only
// the extension headers the opcode has are meaningful; [Decode] zeroes
// the others and [Append] ignores them.
type Packet struct {
	BTH       BTH
	RETH      RETH      // Opcode.HasRETH
	AETH      AETH      // Opcode.HasAETH
	Atomic    AtomicETH // Opcode.HasAtomicETH
	AtomicAck uint64    // Opcode.HasAtomicAckETH: original remote value
	Imm       uint32    // Opcode.HasImm: immediate data, as on the wire (big endian)
	InvRKey   uint32    // Opcode.HasIETH: R_Key to invalidate

	// Payload is the data after the headers, without pad and ICRC. After
	// Decode it aliases the decoded buffer (its capacity ends with it).
	Payload []byte
}

// HeaderLen returns the length of the BTH and the extension headers of
// p's opcode (for an unsupported opcode: BTHLen).
func (p *Packet) HeaderLen() int {
	if h := p.BTH.Opcode.info().hlen; h != 0 {
		return int(h)
	}
	return BTHLen
}

// WireLen returns the length of the UDP payload Append produces for p:
// headers, payload, pad and ICRC.
func (p *Packet) WireLen() int {
	return p.HeaderLen() + len(p.Payload) + padFor(len(p.Payload)) + ICRCLen
}

func padFor(n int) int { return -n & 3 }

// Append appends the UDP payload of p (BTH, extension headers, payload,
// pad, ICRC) to b and returns the extended slice. BTH.PadCount is computed
// from len(p.Payload) (p is not modified); reserved fields are sent as 0.
// Extension headers that p's opcode does not have are not sent; an
// unsupported opcode is sent as a bare BTH plus payload.
//
// The ICRC is computed for the packet as a Linux unconnected UDP socket
// with IP_PMTUDISC_DO sends it from src to dst: no IP options, IP ID 0,
// DF set (see [ICRC]). src and dst must both be IPv4 (IPv4-mapped IPv6 counts as
// IPv4) or both IPv6, and the packet must fit a UDP datagram; anything
// else is a programming error and panics, like an index out of range.
// Append allocates only if b lacks capacity.
func Append(b []byte, p *Packet, src, dst netip.AddrPort) []byte {
	return AppendIPID(b, p, src, dst, 0)
}

// AppendIPID is [Append] for an IPv4 packet that carries IP ID id (DF
// set); id is ignored for IPv6. The k-th segment (from 0) of a UDP GSO
// send (UDP_SEGMENT) on an unconnected IP_PMTUDISC_DO socket carries IP
// ID k: the kernel numbers the segments from the first one's ID, 0. rxe
// checks the ICRC over the real IP ID, so each segment needs its own.
func AppendIPID(b []byte, p *Packet, src, dst netip.AddrPort, id uint16) []byte {
	return appendIPID(nil, b, p, src, dst, id)
}

func appendIPID(pc *ICRCCache, b []byte, p *Packet, src, dst netip.AddrPort, id uint16) []byte {
	n := p.WireLen()
	start := len(b)
	b = slices.Grow(b, n)[:start+n]
	out := b[start:]
	putHeaders(out, p)
	h := p.HeaderLen()
	m := len(p.Payload)
	clear(out[h+m : n-ICRCLen])
	// The payload is copied in the pass that adds it to the ICRC, so it
	// is read once for both.
	c := pc.prefix(out, n, src, dst, id, true)
	c = crcShort(c, out[BTHLen:h])
	c = crcCopyUpdate(c, out[h:h+m], p.Payload)
	c = crcShort(c, out[h+m:n-ICRCLen])
	binary.LittleEndian.PutUint32(out[n-ICRCLen:], c)
	return b
}

// AppendHeader appends p's BTH and extension headers (p.HeaderLen()
// bytes) to b, with the PadCount for len(p.Payload); p.Payload itself is
// not appended. With [AppendTrailer] it lets a sender hand headers,
// payload and trailer to the kernel as separate buffers (sendmsg with an
// iovec each) instead of copying the payload: the three concatenated are
// what [Append] produces.
func AppendHeader(b []byte, p *Packet) []byte {
	h := p.HeaderLen()
	start := len(b)
	b = slices.Grow(b, h)[:start+h]
	putHeaders(b[start:], p)
	return b
}

// AppendTrailer appends the pad and the ICRC that follow hdr and payload
// on the wire to b: hdr must be the headers [AppendHeader] wrote for a
// packet with this payload length. The ICRC is computed as by [Append]
// (same panics). It allocates only if b lacks capacity.
func AppendTrailer(b, hdr, payload []byte, src, dst netip.AddrPort) []byte {
	return AppendTrailerIPID(b, hdr, payload, src, dst, 0)
}

// AppendTrailerIPID is [AppendTrailer] for an IPv4 packet that carries IP
// ID id (DF set), as the segments of a UDP GSO send do (see [AppendIPID]);
// id is ignored for IPv6.
func AppendTrailerIPID(b, hdr, payload []byte, src, dst netip.AddrPort, id uint16) []byte {
	return appendTrailerIPID(nil, b, hdr, payload, src, dst, id)
}

func appendTrailerIPID(pc *ICRCCache, b, hdr, payload []byte, src, dst netip.AddrPort, id uint16) []byte {
	pad := padFor(len(payload))
	n := len(hdr) + len(payload) + pad + ICRCLen
	c := pc.prefix(hdr, n, src, dst, id, true)
	c = crcShort(c, hdr[BTHLen:])
	c = crcUpdate(c, payload)
	c = crcShort(c, zeroPad[:pad])
	b = append(b, zeroPad[:pad]...)
	return binary.LittleEndian.AppendUint32(b, c)
}

var zeroPad [3]byte

// putHeaders writes the BTH and the extension headers of p into out.
func putHeaders(out []byte, p *Packet) {
	o := p.BTH.Opcode
	out[0] = byte(o)
	f := byte(padFor(len(p.Payload)))<<4 | p.BTH.TVer&0xf
	if p.BTH.SolicitedEvent {
		f |= 0x80
	}
	if p.BTH.MigReq {
		f |= 0x40
	}
	out[1] = f
	binary.BigEndian.PutUint16(out[2:], p.BTH.PKey)
	binary.BigEndian.PutUint32(out[4:], p.BTH.DestQP&PSNMask) // reserved byte 4 = 0
	psn := p.BTH.PSN & PSNMask
	if p.BTH.AckReq {
		psn |= 1 << 31
	}
	binary.BigEndian.PutUint32(out[8:], psn)
	off := BTHLen
	fl := o.info().flags
	if fl&fRETH != 0 {
		binary.BigEndian.PutUint64(out[off:], p.RETH.VA)
		binary.BigEndian.PutUint32(out[off+8:], p.RETH.RKey)
		binary.BigEndian.PutUint32(out[off+12:], p.RETH.DMALen)
		off += RETHLen
	}
	if fl&fAtomicETH != 0 {
		binary.BigEndian.PutUint64(out[off:], p.Atomic.VA)
		binary.BigEndian.PutUint32(out[off+8:], p.Atomic.RKey)
		binary.BigEndian.PutUint64(out[off+12:], p.Atomic.SwapAdd)
		binary.BigEndian.PutUint64(out[off+20:], p.Atomic.Compare)
		off += AtomicETHLen
	}
	if fl&fAETH != 0 {
		binary.BigEndian.PutUint32(out[off:], uint32(p.AETH.Syndrome)<<24|p.AETH.MSN&PSNMask)
		off += AETHLen
	}
	if fl&fAtomicAckETH != 0 {
		binary.BigEndian.PutUint64(out[off:], p.AtomicAck)
		off += AtomicAckETHLen
	}
	if fl&fImm != 0 {
		binary.BigEndian.PutUint32(out[off:], p.Imm)
		off += ImmLen
	}
	if fl&fIETH != 0 {
		binary.BigEndian.PutUint32(out[off:], p.InvRKey)
	}
}

// Decode parses the UDP payload b of a RoCEv2 packet (including the ICRC,
// which it does not check; see [CheckICRC]) into p. p.Payload aliases b.
// Every field of p is overwritten; fields the opcode has no header for
// are zeroed. Malformed input returns an error matching [ErrMalformed]
// (and [ErrUnsupported] for a non-RC transport, an unknown opcode or a
// TVer other than 0); p is then undefined.
//
// Checked: the length covers BTH, extension headers and ICRC, is a
// multiple of 4, and for opcodes without payload matches exactly (pad 0);
// PadCount does not exceed the bytes after the headers. Reserved bits are
// ignored, as IBTA prescribes for receivers.
func Decode(b []byte, p *Packet) error {
	if len(b) < BTHLen+ICRCLen {
		return fmt.Errorf("%w: %d bytes, shorter than BTH and ICRC", ErrMalformed, len(b))
	}
	o := Opcode(b[0])
	info := o.info()
	if info.flags == 0 {
		return fmt.Errorf("%w: %w: opcode 0x%02x", ErrMalformed, ErrUnsupported, b[0])
	}
	if tv := b[1] & 0xf; tv != 0 {
		return fmt.Errorf("%w: %w: TVer %d", ErrMalformed, ErrUnsupported, tv)
	}
	if len(b)&3 != 0 {
		return fmt.Errorf("%w: %s: length %d not a multiple of 4", ErrMalformed, o, len(b))
	}
	hl := int(info.hlen)
	pad := int(b[1]>>4) & 3
	end := len(b) - ICRCLen - pad // end of payload
	if end < hl {
		return fmt.Errorf("%w: %s: %d bytes with pad %d, headers need %d+%d",
			ErrMalformed, o, len(b), pad, hl, ICRCLen)
	}
	if info.flags&fPayload == 0 && (end != hl || pad != 0) {
		return fmt.Errorf("%w: %s: %d bytes with pad %d, want exactly %d",
			ErrMalformed, o, len(b), pad, hl+ICRCLen)
	}
	*p = Packet{BTH: BTH{
		Opcode:         o,
		SolicitedEvent: b[1]&0x80 != 0,
		MigReq:         b[1]&0x40 != 0,
		PadCount:       uint8(pad),
		PKey:           binary.BigEndian.Uint16(b[2:]),
		DestQP:         binary.BigEndian.Uint32(b[4:]) & PSNMask,
		AckReq:         b[8]&0x80 != 0,
		PSN:            binary.BigEndian.Uint32(b[8:]) & PSNMask,
	}}
	off := BTHLen
	if info.flags&fRETH != 0 {
		p.RETH = RETH{
			VA:     binary.BigEndian.Uint64(b[off:]),
			RKey:   binary.BigEndian.Uint32(b[off+8:]),
			DMALen: binary.BigEndian.Uint32(b[off+12:]),
		}
		off += RETHLen
	}
	if info.flags&fAtomicETH != 0 {
		p.Atomic = AtomicETH{
			VA:      binary.BigEndian.Uint64(b[off:]),
			RKey:    binary.BigEndian.Uint32(b[off+8:]),
			SwapAdd: binary.BigEndian.Uint64(b[off+12:]),
			Compare: binary.BigEndian.Uint64(b[off+20:]),
		}
		off += AtomicETHLen
	}
	if info.flags&fAETH != 0 {
		v := binary.BigEndian.Uint32(b[off:])
		p.AETH = AETH{Syndrome: uint8(v >> 24), MSN: v & PSNMask}
		off += AETHLen
	}
	if info.flags&fAtomicAckETH != 0 {
		p.AtomicAck = binary.BigEndian.Uint64(b[off:])
		off += AtomicAckETHLen
	}
	if info.flags&fImm != 0 {
		p.Imm = binary.BigEndian.Uint32(b[off:])
		off += ImmLen
	}
	if info.flags&fIETH != 0 {
		p.InvRKey = binary.BigEndian.Uint32(b[off:])
	}
	if info.flags&fPayload != 0 {
		p.Payload = b[hl:end:end]
	}
	return nil
}
