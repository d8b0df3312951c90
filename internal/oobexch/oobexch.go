package oobexch

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
)

// ErrFormat is wrapped by every decoding error of this package.
var ErrFormat = errors.New("oobexch: malformed exchange message")

// DestSize is the size of ibv_rc_pingpong's address message on the wire,
// terminating NUL included.
const DestSize = len("0000:000000:000000:") + 32 + 1

// DoneMsg is what an ibv_rc_pingpong client writes after reading the
// server's address (5 bytes, NUL included).
var DoneMsg = []byte("done\x00")

// Dest is one side's queue pair address as ibv_rc_pingpong exchanges it.
type Dest struct {
	LID uint16
	QPN uint32 // 24 bits
	PSN uint32 // 24 bits
	GID [16]byte
}

// GIDFromAddr returns the GID of an IP address: IPv4 addresses map to
// ::ffff:a.b.c.d as RoCEv2 does.
func GIDFromAddr(a netip.Addr) [16]byte {
	return a.As16()
}

// Addr returns the GID as an IP address (IPv4-mapped GIDs unmapped).
func (d Dest) Addr() netip.Addr {
	return netip.AddrFrom16(d.GID).Unmap()
}

func (d Dest) String() string {
	return fmt.Sprintf("LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s", d.LID, d.QPN, d.PSN, netip.AddrFrom16(d.GID))
}

func (d Dest) check() error {
	if d.QPN > 0xffffff {
		return fmt.Errorf("%w: QPN %#x exceeds 24 bits", ErrFormat, d.QPN)
	}
	if d.PSN > 0xffffff {
		return fmt.Errorf("%w: PSN %#x exceeds 24 bits", ErrFormat, d.PSN)
	}
	return nil
}

// AppendBinary appends the DestSize-byte wire form of d to b.
func (d Dest) AppendBinary(b []byte) ([]byte, error) {
	if err := d.check(); err != nil {
		return b, err
	}
	b = fmt.Appendf(b, "%04x:%06x:%06x:", d.LID, d.QPN, d.PSN)
	b = appendHex(b, d.GID[:])
	return append(b, 0), nil
}

// MarshalBinary returns the DestSize-byte wire form of d.
func (d Dest) MarshalBinary() ([]byte, error) {
	return d.AppendBinary(make([]byte, 0, DestSize))
}

// ParseDest decodes the wire form of an ibv_rc_pingpong address. It accepts
// exactly what the peer's single read would: DestSize bytes whose text ends
// at the first NUL. Like rdma-core's sscanf it takes the hex fields up to
// each colon, but it insists on the GID being 32 hex digits.
func ParseDest(msg []byte) (Dest, error) {
	var d Dest
	if len(msg) != DestSize {
		return d, fmt.Errorf("%w: rc_pingpong address is %d bytes, want %d", ErrFormat, len(msg), DestSize)
	}
	s := cstring(msg)
	f, err := splitFields(s, 4)
	if err != nil {
		return d, err
	}
	lid, err := parseHex(f[0], 16, "LID")
	if err != nil {
		return d, err
	}
	qpn, err := parseHex(f[1], 24, "QPN")
	if err != nil {
		return d, err
	}
	psn, err := parseHex(f[2], 24, "PSN")
	if err != nil {
		return d, err
	}
	if len(f[3]) != 32 {
		return d, fmt.Errorf("%w: GID %q is not 32 hex digits", ErrFormat, f[3])
	}
	for i := 0; i < 16; i++ {
		v, err := parseHex(f[3][2*i:2*i+2], 8, "GID")
		if err != nil {
			return d, err
		}
		d.GID[i] = byte(v)
	}
	d.LID, d.QPN, d.PSN = uint16(lid), uint32(qpn), uint32(psn)
	return d, nil
}

// IsDone reports whether msg is the client's closing "done" message.
func IsDone(msg []byte) bool {
	return len(msg) == len(DoneMsg) && string(msg) == string(DoneMsg)
}

// PerftestKeySize is the size of perftest's KEY_PRINT_FMT_GID message on the
// wire (KEY_MSG_SIZE_GID), terminating NUL included.
const PerftestKeySize = 108

// PerftestKey is one side's address as perftest's ethernet handshake sends
// it when a GID index is in use.
type PerftestKey struct {
	LID      uint16
	OutReads uint16
	QPN      uint32 // 24 bits
	PSN      uint32 // 24 bits
	RKey     uint32
	VAddr    uint64
	GID      [16]byte
	SRQN     uint32
}

func (k PerftestKey) String() string {
	return fmt.Sprintf("LID 0x%04x OUT %#x QPN 0x%06x PSN 0x%06x RKey %#08x VAddr %#016x GID %s SRQN %#x",
		k.LID, k.OutReads, k.QPN, k.PSN, k.RKey, k.VAddr, netip.AddrFrom16(k.GID), k.SRQN)
}

// AppendBinary appends the PerftestKeySize-byte wire form of k to b.
func (k PerftestKey) AppendBinary(b []byte) ([]byte, error) {
	if k.QPN > 0xffffff || k.PSN > 0xffffff {
		return b, fmt.Errorf("%w: QPN %#x or PSN %#x exceeds 24 bits", ErrFormat, k.QPN, k.PSN)
	}
	b = fmt.Appendf(b, "%04x:%04x:%06x:%06x:%08x:%016x:", k.LID, k.OutReads, k.QPN, k.PSN, k.RKey, k.VAddr)
	for _, g := range k.GID {
		b = fmt.Appendf(b, "%02x:", g)
	}
	b = fmt.Appendf(b, "%08x:", k.SRQN)
	return append(b, 0), nil
}

// MarshalBinary returns the PerftestKeySize-byte wire form of k.
func (k PerftestKey) MarshalBinary() ([]byte, error) {
	return k.AppendBinary(make([]byte, 0, PerftestKeySize))
}

// ParsePerftestKey decodes perftest's KEY_PRINT_FMT_GID message
// (PerftestKeySize bytes, text ending at the first NUL).
func ParsePerftestKey(msg []byte) (PerftestKey, error) {
	var k PerftestKey
	if len(msg) != PerftestKeySize {
		return k, fmt.Errorf("%w: perftest key is %d bytes, want %d", ErrFormat, len(msg), PerftestKeySize)
	}
	s := cstring(msg)
	// 6 fixed fields, 16 GID bytes, SRQN, and the empty text after the
	// trailing colon.
	f, err := splitFields(s, 24)
	if err != nil {
		return k, err
	}
	if f[23] != "" {
		return k, fmt.Errorf("%w: trailing text %q after SRQN", ErrFormat, f[23])
	}
	var v [6]uint64
	for i, spec := range []struct {
		bits int
		name string
	}{{16, "LID"}, {16, "out_reads"}, {24, "QPN"}, {24, "PSN"}, {32, "rkey"}, {64, "vaddr"}} {
		if v[i], err = parseHex(f[i], spec.bits, spec.name); err != nil {
			return k, err
		}
	}
	for i := 0; i < 16; i++ {
		g, err := parseHex(f[6+i], 8, "GID")
		if err != nil {
			return k, err
		}
		k.GID[i] = byte(g)
	}
	srqn, err := parseHex(f[22], 32, "SRQN")
	if err != nil {
		return k, err
	}
	k.LID, k.OutReads = uint16(v[0]), uint16(v[1])
	k.QPN, k.PSN, k.RKey, k.VAddr = uint32(v[2]), uint32(v[3]), uint32(v[4]), v[5]
	k.SRQN = uint32(srqn)
	return k, nil
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// splitFields splits s at colons into exactly n fields.
func splitFields(s string, n int) ([]string, error) {
	f := make([]string, 0, n)
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			if len(f) == n-1 {
				return nil, fmt.Errorf("%w: more than %d fields", ErrFormat, n)
			}
			f = append(f, s[start:i])
			start = i + 1
		}
	}
	f = append(f, s[start:])
	if len(f) != n {
		return nil, fmt.Errorf("%w: %d colon-separated fields, want %d", ErrFormat, len(f), n)
	}
	return f, nil
}

func parseHex(s string, bits int, name string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: empty %s", ErrFormat, name)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return 0, fmt.Errorf("%w: %s %q is not hexadecimal", ErrFormat, name, s)
		}
	}
	v, err := strconv.ParseUint(s, 16, bits)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %q does not fit %d bits", ErrFormat, name, s, bits)
	}
	return v, nil
}

func appendHex(b, p []byte) []byte {
	const digits = "0123456789abcdef"
	for _, c := range p {
		b = append(b, digits[c>>4], digits[c&15])
	}
	return b
}
