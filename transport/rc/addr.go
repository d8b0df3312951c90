package rc

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/ucgo/ucgo/uct"
)

// Wire versions of the packed iface address, the packed remote key and the
// connection manager messages. A peer with another version is refused.
// The connection manager's version also stands for the framing of AMs
// and credit grants (amHdrLen), so peers that frame them differently
// never connect.
const (
	addrVersion = 1
	rkeyVersion = 1
	cmVersion   = 3
)

// addrLen is the packed size of an iface address:
// version(1) flags(1) udp port(2) cm port(2) reserved(2) ip(16) nonce(8).
const addrLen = 32

// Address is a decoded rc iface address: where the peer's RoCEv2 provider
// listens (IP, UDP port), where its connection manager accepts (TCP port)
// and the iface's random nonce, which tells a reopened iface on the same
// ports from the one an address was taken from.
type Address struct {
	IP      netip.Addr // IPv4 (the GID is its IPv4-mapped form)
	UDPPort uint16
	CMPort  uint16
	Nonce   uint64
}

// Pack encodes a.
func (a Address) Pack() []byte {
	b := make([]byte, addrLen)
	b[0] = addrVersion
	binary.BigEndian.PutUint16(b[2:], a.UDPPort)
	binary.BigEndian.PutUint16(b[4:], a.CMPort)
	ip16 := a.IP.As16()
	copy(b[8:24], ip16[:])
	binary.BigEndian.PutUint64(b[24:], a.Nonce)
	return b
}

func (a Address) String() string {
	return fmt.Sprintf("%s udp %d cm %d nonce %016x", a.IP, a.UDPPort, a.CMPort, a.Nonce)
}

// DecodeAddress parses a packed iface address. Every error wraps
// uct.ErrInvalidAddress; it never panics.
func DecodeAddress(b []byte) (Address, error) {
	if len(b) != addrLen {
		return Address{}, fmt.Errorf("rc address: length %d, want %d: %w", len(b), addrLen, uct.ErrInvalidAddress)
	}
	if b[0] != addrVersion {
		return Address{}, fmt.Errorf("rc address: version %d, want %d: %w", b[0], addrVersion, uct.ErrInvalidAddress)
	}
	if b[1] != 0 || b[6] != 0 || b[7] != 0 {
		return Address{}, fmt.Errorf("rc address: reserved bytes set: %w", uct.ErrInvalidAddress)
	}
	ip := netip.AddrFrom16([16]byte(b[8:24]))
	if !ip.Is4In6() {
		return Address{}, fmt.Errorf("rc address: %s is not an IPv4-mapped GID: %w", ip, uct.ErrInvalidAddress)
	}
	a := Address{
		IP:      ip.Unmap(),
		UDPPort: binary.BigEndian.Uint16(b[2:]),
		CMPort:  binary.BigEndian.Uint16(b[4:]),
		Nonce:   binary.BigEndian.Uint64(b[24:]),
	}
	if a.UDPPort == 0 || a.CMPort == 0 {
		return Address{}, fmt.Errorf("rc address: port 0 (udp %d, cm %d): %w", a.UDPPort, a.CMPort, uct.ErrInvalidAddress)
	}
	if a.IP.IsUnspecified() || a.IP.IsMulticast() || a.IP == netip.IPv4Unspecified() {
		return Address{}, fmt.Errorf("rc address: unusable IP %s: %w", a.IP, uct.ErrInvalidAddress)
	}
	return a, nil
}

// rkeyLen is the packed size of a remote key: version(1) rkey(4) MD id(8).
const rkeyLen = 13

// packRKey encodes a verbs rkey with the id of the MD that registered it.
func packRKey(rkey uint32, mdID uint64) []byte {
	b := make([]byte, rkeyLen)
	b[0] = rkeyVersion
	binary.BigEndian.PutUint32(b[1:], rkey)
	binary.BigEndian.PutUint64(b[5:], mdID)
	return b
}

// unpackRKey decodes a packed remote key. Errors wrap uct.ErrInvalidParam.
func unpackRKey(b []byte) (rkey uint32, mdID uint64, err error) {
	if len(b) != rkeyLen {
		return 0, 0, fmt.Errorf("rc rkey: length %d, want %d: %w", len(b), rkeyLen, uct.ErrInvalidParam)
	}
	if b[0] != rkeyVersion {
		return 0, 0, fmt.Errorf("rc rkey: version %d, want %d: %w", b[0], rkeyVersion, uct.ErrInvalidParam)
	}
	mdID = binary.BigEndian.Uint64(b[5:])
	if mdID == 0 {
		return 0, 0, fmt.Errorf("rc rkey: MD id 0: %w", uct.ErrInvalidParam)
	}
	return binary.BigEndian.Uint32(b[1:]), mdID, nil
}

// An active message is a SEND without immediate data whose payload is
// a 1-byte header, the AM id (0..uct.MaxAMID), and then the message. A
// plain SEND's packets are all full path-MTU packets but the last, which
// is shorter, so every message leaves in one GSO datagram; an immediate
// would lengthen the last packet by 4 bytes and, whenever that packet is
// then longer than the others, end the datagram before it. A received
// AM without the header byte or with an id above uct.MaxAMID is dropped.
const amHdrLen = 1

// decodeAM splits a received AM into its id and message; ok is false if
// b holds no header or an id above uct.MaxAMID.
func decodeAM(b []byte) (id uint8, msg []byte, ok bool) {
	if len(b) < amHdrLen || b[0] > uct.MaxAMID {
		return 0, nil, false
	}
	return b[0], b[amHdrLen:], true
}

// A credit grant is a SEND_WITH_IMM without payload: bit 31 of the
// immediate marks it, its low 16 bits are the number of credits returned
// to the sender. AMs carry no immediate, so a receive with an immediate
// is a grant if bit 31 is set and is dropped otherwise.
const (
	immGrant     = 1 << 31
	immGrantMask = 0xffff
)

func immGrantOf(n int) uint32    { return immGrant | uint32(n)&immGrantMask }
func immIsGrant(imm uint32) bool { return imm&immGrant != 0 }
func immCredits(imm uint32) int  { return int(imm & immGrantMask) }
