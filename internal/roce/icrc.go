package roce

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"net/netip"
	"sync"
)

// The ICRC is the standard CRC-32 (IEEE, as zlib and Ethernet) over
//
//	8 bytes 0xff                     the masked LRH, absent on RoCEv2
//	IPv4 header, TOS, TTL and header checksum set to all ones
//	  (IPv6: traffic class, flow label and hop limit all ones)
//	UDP header, checksum all ones
//	BTH with its reserved byte 4 all ones
//	extension headers, payload and pad
//
// sent little-endian as the last 4 bytes of the UDP payload. The IPv4
// header is the one Linux builds for a UDP datagram without options, so
// the IP ID and the fragment field (DF) are covered.
//
// Internally CRC states are kept in the "raw" form: the register without
// the final inversion, reflected as in hash/crc32 (polynomial 0xedb88320).
// crc32.Update(c, IEEETable, p) == ^raw(^c, p).

// crcTab holds slicing-by-8 tables for the IEEE polynomial; crcTab[0] is
// the byte-at-a-time table. They serve the short pseudo-header, which must
// not go through crc32.Update: that escapes its argument to the heap.
var crcTab = func() *[8][256]uint32 {
	var t [8][256]uint32
	t[0] = *crc32.MakeTable(crc32.IEEE)
	for i := range 256 {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][c&0xff] ^ c>>8
			t[k][i] = c
		}
	}
	return &t
}()

// rawUpdate advances the raw CRC state s over p.
func rawUpdate(s uint32, p []byte) uint32 {
	t := crcTab
	for len(p) >= 8 {
		s ^= binary.LittleEndian.Uint32(p)
		s = t[0][p[7]] ^ t[1][p[6]] ^ t[2][p[5]] ^ t[3][p[4]] ^
			t[4][s>>24] ^ t[5][s>>16&0xff] ^ t[6][s>>8&0xff] ^ t[7][s&0xff]
		p = p[8:]
	}
	for _, b := range p {
		s = t[0][byte(s)^b] ^ s>>8
	}
	return s
}

// lrhState is the raw state after the 8 masked LRH bytes.
var lrhState = rawUpdate(^uint32(0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})

// pseudo-header layout (offsets in the CRC'd stream after the LRH).
const (
	ip4HdrLen = 20
	ip6HdrLen = 40
	udpHdrLen = 8
	// ipIDEnd is the offset in the CRC'd stream (LRH included) just
	// past the IPv4 ID and flags/fragment-offset word.
	ipIDEnd = 8 + 8
	// maxUDPPayload is the largest UDP payload of an IPv4 datagram.
	maxUDPPayload = 65535 - ip4HdrLen - udpHdrLen
	// maxUDPLen is the largest UDP payload the UDP length field allows.
	maxUDPLen = 65535 - udpHdrLen
)

// family reports whether src and dst are both IPv4 (v4 true) or both
// IPv6 (v4 false); IPv4-mapped IPv6 addresses count as IPv4. ok is false
// otherwise.
func family(src, dst netip.AddrPort) (s, d netip.Addr, v4, ok bool) {
	s, d = src.Addr().Unmap(), dst.Addr().Unmap()
	switch {
	case s.Is4() && d.Is4():
		return s, d, true, true
	case s.Is6() && d.Is6():
		return s, d, false, true
	}
	return s, d, false, false
}

// icrc returns the ICRC of udp (the whole UDP payload; its last 4 bytes
// are not covered) for an IPv4 packet with the given IP ID and DF flag,
// or an IPv6 packet (id and df unused).
func icrc(udp []byte, src, dst netip.AddrPort, id uint16, df bool) uint32 {
	return icrcVia(nil, udp, src, dst, id, df)
}

// icrcVia is icrc with the pseudo-header part computed through pc (nil:
// in full).
func icrcVia(pc *ICRCCache, udp []byte, src, dst netip.AddrPort, id uint16, df bool) uint32 {
	c := pc.prefix(udp, len(udp), src, dst, id, df)
	return crcUpdate(c, udp[BTHLen:len(udp)-ICRCLen])
}

// icrcPrefix returns the CRC (in crc32.Update's convention, ready to be
// continued with the bytes after the BTH) of the masked LRH, IP and UDP
// headers and the masked BTH bth[:BTHLen], for a UDP payload of n bytes.
// It panics if the addresses are not of one family, bth is shorter than
// a BTH or n is out of range.
func icrcPrefix(bth []byte, n int, src, dst netip.AddrPort, id uint16, df bool) uint32 {
	s, d, v4, ok := family(src, dst)
	if !ok {
		panic(fmt.Sprintf("roce: ICRC for addresses %v -> %v: not both IPv4 or both IPv6", src, dst))
	}
	if n < BTHLen+ICRCLen || n > maxUDPLen || len(bth) < BTHLen {
		panic(fmt.Sprintf("roce: ICRC of a %d-byte UDP payload", n))
	}
	var buf [ip6HdrLen + udpHdrLen + BTHLen]byte
	var ph []byte
	if v4 {
		ph = buf[:ip4HdrLen+udpHdrLen+BTHLen]
		putMaskedIPv4UDP(ph, s, d, src.Port(), dst.Port(), uint16(ip4HdrLen+udpHdrLen+n), uint16(udpHdrLen+n), id, df)
	} else {
		ph = buf[:]
		ph[0], ph[1], ph[2], ph[3] = 0x6f, 0xff, 0xff, 0xff // version 6, TC and flow label masked
		binary.BigEndian.PutUint16(ph[4:], uint16(udpHdrLen+n))
		ph[6] = 17
		ph[7] = 0xff // hop limit
		a, b := s.As16(), d.As16()
		copy(ph[8:], a[:])
		copy(ph[24:], b[:])
		putMaskedUDP(ph[ip6HdrLen:], src.Port(), dst.Port(), uint16(udpHdrLen+n))
	}
	u := ph[len(ph)-udpHdrLen-BTHLen:]
	copy(u[udpHdrLen:], bth[:BTHLen])
	u[udpHdrLen+4] = 0xff // BTH reserved byte
	return ^rawUpdate(lrhState, ph)
}

// putMaskedIPv4UDP writes into h the IPv4 and UDP headers (28 bytes),
// with total length tl and UDP length ul, as the ICRC covers them: the
// masked fields all ones.
func putMaskedIPv4UDP(h []byte, s, d netip.Addr, sport, dport, tl, ul, id uint16, df bool) {
	h[0] = 0x45
	h[1] = 0xff // TOS
	binary.BigEndian.PutUint16(h[2:], tl)
	binary.BigEndian.PutUint16(h[4:], id)
	if df {
		h[6] = 0x40
	}
	h[8] = 0xff // TTL
	h[9] = 17
	h[10], h[11] = 0xff, 0xff // header checksum
	a, b := s.As4(), d.As4()
	copy(h[12:], a[:])
	copy(h[16:], b[:])
	putMaskedUDP(h[ip4HdrLen:], sport, dport, ul)
}

// putMaskedUDP writes into h a UDP header as the ICRC covers it.
func putMaskedUDP(h []byte, sport, dport, length uint16) {
	binary.BigEndian.PutUint16(h[0:], sport)
	binary.BigEndian.PutUint16(h[2:], dport)
	binary.BigEndian.PutUint16(h[4:], length)
	h[6], h[7] = 0xff, 0xff // UDP checksum
}

// ICRC returns the ICRC of the UDP payload udp (headers, payload, pad and
// the 4-byte ICRC field, which is not covered) sent from src to dst, as
// a Linux unconnected UDP socket with IP_PMTUDISC_DO sends it: IPv4
// without options, IP ID 0, DF set; or IPv6. The UDP ports are covered.
// The value goes on the wire little-endian. ICRC panics if udp is shorter
// than BTHLen+ICRCLen or longer than a UDP datagram can be (65527), or
// the addresses are not both IPv4 (IPv4-mapped counts as IPv4) or both
// IPv6.
func ICRC(udp []byte, src, dst netip.AddrPort) uint32 {
	return icrc(udp, src, dst, 0, true)
}

// CheckICRC verifies the ICRC of a received UDP payload udp from src to
// dst (as a UDP socket reports them). It returns nil if the ICRC is
// consistent, an error matching [ErrBadICRC] otherwise (also for a
// payload too short to hold BTH and ICRC, or addresses of different
// families).
//
// IPv6: the ICRC is checked in full (32 bits).
//
// IPv4: the IP ID and the DF flag are covered by the ICRC but a UDP
// socket does not see them, and senders differ (rxe increments the ID,
// Linux sockets with DF send ID 0). CheckICRC accepts the packet if some
// IP ID, with DF set or clear, makes the ICRC consistent. The CRC is
// affine over GF(2), so instead of trying 2^17 candidates it maps the
// difference between the received ICRC and the one for ID 0 + DF back to
// the 32-bit ID/flags/fragment word (precomputed linear maps; cost
// independent of the packet length beyond the one CRC pass) and checks
// that only ID and DF bits differ. That leaves 15 of the 32 bits as a
// check: a corrupted packet passes with probability 2^-15 (about 3e-5)
// instead of 2^-32. UDP's own checksum (if the sender set it) and the
// Ethernet FCS still protect the packet on the way; rxe sends UDP
// checksum 0.
func CheckICRC(udp []byte, src, dst netip.AddrPort) error {
	return CheckICRCID(udp, src, dst, 0)
}

// CheckICRCID is [CheckICRC] computing the ICRC for IPv4 ID id (DF set)
// first, for a receiver that can guess the ID: the k-th segment of a
// UDP GSO send from a socket that sends ID 0 carries ID k. A right
// guess saves mapping the difference back to the ID; a wrong one costs
// nothing but that mapping, and the result is the same for any id.
func CheckICRCID(udp []byte, src, dst netip.AddrPort, id uint16) error {
	return checkICRCID(nil, udp, src, dst, id)
}

func checkICRCID(pc *ICRCCache, udp []byte, src, dst netip.AddrPort, id uint16) error {
	n := len(udp)
	if n < BTHLen+ICRCLen || n > maxUDPLen {
		return fmt.Errorf("%w: %w: %d-byte UDP payload", ErrBadICRC, ErrMalformed, n)
	}
	if !pc.sameFamily(src, dst) {
		return fmt.Errorf("%w: addresses %v -> %v not both IPv4 or both IPv6", ErrBadICRC, src, dst)
	}
	return matchICRC(udp, src, icrcVia(pc, udp, src, dst, id, true))
}

// matchICRC compares the ICRC field of udp (a received UDP payload from
// src, of a length CheckICRC accepts) with want, its ICRC for some IP ID
// with DF set, allowing another IP ID and DF clear as CheckICRC
// describes: the two ID/flags words then differ only in those bits.
func matchICRC(udp []byte, src netip.AddrPort, want uint32) error {
	n := len(udp)
	got := binary.LittleEndian.Uint32(udp[n-ICRCLen:])
	if got == want {
		return nil
	}
	if !src.Addr().Unmap().Is4() || n > maxUDPPayload {
		return ErrBadICRC
	}
	if w := ipIDWordDiff(got^want, n); w&^ipIDDFBits != 0 {
		return ErrBadICRC
	}
	return nil
}

// ipIDDFBits are the bits of the IPv4 ID/flags/fragment word (big endian
// as on the wire) that CheckICRC lets differ: the ID and DF.
const ipIDDFBits = 0xffff4000

// ipIDWordDiff returns the change of the IPv4 ID/flags/fragment word that
// turns an ICRC into one differing by diff, for a UDP payload of n bytes.
//
// A change w of that word changes the raw state just past it by G(w)
// (the CRC of its 4 bytes from state 0); the k = stream length - ipIDEnd
// bytes after it propagate that by Z^k, the (invertible) CRC shift by k
// zero bytes. So diff = Z^k(G(w)) and w = G^-1(Z^-k(diff)), with Z^-k
// composed of precomputed Z^-(2^j) maps, one per set bit of k.
func ipIDWordDiff(diff uint32, n int) uint32 {
	lin := linearMaps()
	k := uint(8 + ip4HdrLen + udpHdrLen + n - ICRCLen - ipIDEnd)
	for k != 0 {
		j := bits.TrailingZeros(k)
		k &= k - 1
		diff = lin.zinv[j].apply(diff)
	}
	return lin.ginv.apply(diff)
}

// byteMap is a GF(2)-linear map of 32-bit words, tabulated per input byte.
type byteMap [4][256]uint32

func (m *byteMap) apply(v uint32) uint32 {
	return m[0][v&0xff] ^ m[1][v>>8&0xff] ^ m[2][v>>16&0xff] ^ m[3][v>>24]
}

// colMap is a GF(2)-linear map of 32-bit words given by the images of
// the unit vectors.
type colMap [32]uint32

func (c *colMap) apply(v uint32) uint32 {
	var r uint32
	for ; v != 0; v &= v - 1 {
		r ^= c[bits.TrailingZeros32(v)]
	}
	return r
}

func (c *colMap) tabulate() *byteMap {
	var m byteMap
	for pos := range 4 {
		for v := 1; v < 256; v++ {
			low := v & -v
			m[pos][v] = m[pos][v&^low] ^ c[pos*8+bits.TrailingZeros(uint(low))]
		}
	}
	return &m
}

// invert returns the inverse of the bijective map c; ok is false if c
// is singular.
func (c *colMap) invert() (inv colMap, ok bool) {
	v := *c // v[i] = c(x[i]), x starting as the unit vectors
	var x colMap
	for i := range x {
		x[i] = 1 << i
	}
	for b := range 32 {
		p := -1
		for r := b; r < 32; r++ {
			if v[r]>>b&1 != 0 {
				p = r
				break
			}
		}
		if p < 0 {
			return inv, false
		}
		v[b], v[p] = v[p], v[b]
		x[b], x[p] = x[p], x[b]
		for r := range 32 {
			if r != b && v[r]>>b&1 != 0 {
				v[r] ^= v[b]
				x[r] ^= x[b]
			}
		}
	}
	return x, true // v is now the identity: c(x[b]) = 1<<b
}

type linear struct {
	zinv [17]*byteMap // zinv[j] = Z^-(2^j), enough for k < 2^17
	ginv *byteMap
}

var linearMaps = sync.OnceValue(func() *linear {
	t := &crcTab[0]
	// One zero byte: s' = t[s&0xff] ^ s>>8. The top byte of s' is the
	// top byte of t[s&0xff], and t's top bytes are a permutation, so the
	// step is invertible.
	var top [256]int
	for i := range top {
		top[i] = -1
	}
	for x := range 256 {
		if top[t[x]>>24] >= 0 {
			panic("roce: CRC table top bytes not a permutation")
		}
		top[t[x]>>24] = x
	}
	z1inv := func(s uint32) uint32 {
		x := uint32(top[s>>24])
		return (s^t[x])<<8 | x
	}
	lin := new(linear)
	var z colMap
	for i := range z {
		z[i] = z1inv(1 << i)
	}
	for j := range lin.zinv {
		lin.zinv[j] = z.tabulate()
		var sq colMap
		for i := range sq {
			sq[i] = z.apply(z[i])
		}
		z = sq
	}
	var g colMap
	for i := range g {
		var w [4]byte
		binary.BigEndian.PutUint32(w[:], 1<<i)
		g[i] = rawUpdate(0, w[:])
	}
	gi, ok := g.invert()
	if !ok {
		panic("roce: CRC of a 32-bit word not invertible")
	}
	lin.ginv = gi.tabulate()
	return lin
})
