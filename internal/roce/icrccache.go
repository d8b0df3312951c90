package roce

import "net/netip"

// ICRCCache computes the ICRC's pseudo-header part faster for a run of
// IPv4 packets between the same two endpoints. Of the 40 bytes the ICRC
// covers before a packet's extension headers (IPv4 header, UDP header,
// BTH; see [ICRC]), only the two length fields, the IP ID, the DF flag
// and the BTH change from packet to packet; the addresses, the ports
// and the masked fields do not. The CRC is linear over GF(2), so the
// raw state after the IPv4 and UDP headers is the state for those
// headers with the changing fields zero (computed once per pair of
// endpoints and kept) XOR one table entry per byte of the changing
// fields; only the 12-byte BTH is then run through the CRC.
//
// A cache remembers one pair of endpoints, the last one it served; a
// packet between others, or an IPv6 one, is computed in full. The zero
// value is ready for use. An ICRCCache is not safe for concurrent use.
type ICRCCache struct {
	src, dst netip.AddrPort
	fixed    uint32 // raw state after LRH, IPv4 and UDP headers, changing fields zero
	v4       bool   // src and dst are both IPv4: fixed is valid
	same     bool   // src and dst are of one family (see family)
	set      bool   // src and dst are filled in
}

// Offsets of the changing bytes in the IPv4 and UDP headers (28 bytes)
// that a cached prefix adds in through pseudoVar.
var pseudoVarAt = [...]int{
	2, 3, // IPv4 total length
	4, 5, // IP ID
	6,                            // flags (DF) and high bits of the fragment offset
	ip4HdrLen + 4, ip4HdrLen + 5, // UDP length
}

// pseudoVar[k][v] is the raw CRC, from state 0, of the 28 bytes of IPv4
// and UDP header that are zero but for byte pseudoVarAt[k], which is v.
var pseudoVar = func() *[len(pseudoVarAt)][256]uint32 {
	var t [len(pseudoVarAt)][256]uint32
	var h [ip4HdrLen + udpHdrLen]byte
	for k, at := range pseudoVarAt {
		for v := 1; v < 256; v++ {
			h[at] = byte(v)
			t[k][v] = rawUpdate(0, h[:])
		}
		h[at] = 0
	}
	return &t
}()

// fill makes c serve src and dst.
func (c *ICRCCache) fill(src, dst netip.AddrPort) {
	*c = ICRCCache{src: src, dst: dst, set: true}
	s, d, v4, ok := family(src, dst)
	c.same = ok
	if !ok || !v4 {
		return
	}
	var h [ip4HdrLen + udpHdrLen]byte
	putMaskedIPv4UDP(h[:], s, d, src.Port(), dst.Port(), 0, 0, 0, false) // the changing fields zero
	c.fixed = rawUpdate(lrhState, h[:])
	c.v4 = true
}

// sameFamily reports whether src and dst are both IPv4 or both IPv6
// (see family), from the cache when c is not nil.
func (c *ICRCCache) sameFamily(src, dst netip.AddrPort) bool {
	if c == nil {
		_, _, _, ok := family(src, dst)
		return ok
	}
	if !c.set || c.src != src || c.dst != dst {
		c.fill(src, dst)
	}
	return c.same
}

// prefix is icrcPrefix (same result, same panics), from the cache when
// c is not nil and src and dst are IPv4.
func (c *ICRCCache) prefix(bth []byte, n int, src, dst netip.AddrPort, id uint16, df bool) uint32 {
	if c == nil {
		return icrcPrefix(bth, n, src, dst, id, df)
	}
	if !c.set || c.src != src || c.dst != dst {
		c.fill(src, dst)
	}
	if !c.v4 || n < BTHLen+ICRCLen || n > maxUDPLen || len(bth) < BTHLen {
		return icrcPrefix(bth, n, src, dst, id, df)
	}
	t := pseudoVar
	tl := uint16(ip4HdrLen + udpHdrLen + n)
	ul := uint16(udpHdrLen + n)
	var fl byte
	if df {
		fl = 0x40
	}
	s := c.fixed ^ t[0][tl>>8] ^ t[1][tl&0xff] ^ t[2][id>>8] ^ t[3][id&0xff] ^
		t[4][fl] ^ t[5][ul>>8] ^ t[6][ul&0xff]
	var b [BTHLen]byte
	copy(b[:], bth[:BTHLen])
	b[4] = 0xff // BTH reserved byte
	return ^rawUpdate(s, b[:])
}

// AppendIPID is [AppendIPID] computing the pseudo-header part of the
// ICRC through c.
func (c *ICRCCache) AppendIPID(b []byte, p *Packet, src, dst netip.AddrPort, id uint16) []byte {
	return appendIPID(c, b, p, src, dst, id)
}

// AppendTrailerIPID is [AppendTrailerIPID] computing the pseudo-header
// part of the ICRC through c.
func (c *ICRCCache) AppendTrailerIPID(b, hdr, payload []byte, src, dst netip.AddrPort, id uint16) []byte {
	return appendTrailerIPID(c, b, hdr, payload, src, dst, id)
}

// CheckICRCID is [CheckICRCID] computing the pseudo-header part of the
// ICRC through c.
func (c *ICRCCache) CheckICRCID(udp []byte, src, dst netip.AddrPort, id uint16) error {
	return checkICRCID(c, udp, src, dst, id)
}
