package roce

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"time"
)

// Pcap writes a classic pcap capture file (microsecond timestamps,
// LINKTYPE_ETHERNET) of RoCEv2 packets, for tests and debugging: the
// file opens in Wireshark/tshark, which dissects UDP port 4791 as
// InfiniBand. Each UDP payload is wrapped in the Ethernet, IP and UDP
// headers the kernel would add: IPv4 without options, IP ID 0, DF, TTL
// 64, a correct header checksum and UDP checksum 0 (as rxe sends), or
// IPv6 with hop limit 64 and a correct UDP checksum. The MAC addresses
// are locally administered ones derived from the IP addresses.
//
// A Pcap is not safe for concurrent use. It does not close its writer.
type Pcap struct {
	w   io.Writer
	buf []byte
	enc []byte
}

const (
	pcapMagic       = 0xa1b2c3d4
	pcapSnapLen     = 262144
	linkTypeEther   = 1
	etherHdrLen     = 14
	etherTypeIPv4   = 0x0800
	etherTypeIPv6   = 0x86dd
	pcapRecordHdr   = 16
	pcapDefaultTTL  = 64
	pcapIPProtoUDP  = 17
	pcapFlagsDF     = 0x4000
	pcapMaxUDPFrame = 65535
)

// NewPcap writes the pcap file header to w and returns a writer for its
// packets.
func NewPcap(w io.Writer) (*Pcap, error) {
	var h [24]byte
	binary.LittleEndian.PutUint32(h[0:], pcapMagic)
	binary.LittleEndian.PutUint16(h[4:], 2) // version 2.4
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], pcapSnapLen)
	binary.LittleEndian.PutUint32(h[20:], linkTypeEther)
	if _, err := w.Write(h[:]); err != nil {
		return nil, fmt.Errorf("roce: pcap header: %w", err)
	}
	return &Pcap{w: w}, nil
}

// WritePacket encodes p with [Append] and writes it as sent from src to dst.
func (c *Pcap) WritePacket(ts time.Time, src, dst netip.AddrPort, p *Packet) error {
	c.enc = Append(c.enc[:0], p, src, dst)
	return c.WriteUDP(ts, src, dst, c.enc)
}

// WriteFrame writes an Ethernet frame as captured (headers included),
// for instance one read from an AF_PACKET socket.
func (c *Pcap) WriteFrame(ts time.Time, frame []byte) error {
	if len(frame) > pcapSnapLen {
		return fmt.Errorf("roce: pcap: %d-byte frame too large", len(frame))
	}
	n := pcapRecordHdr + len(frame)
	c.buf = slices.Grow(c.buf[:0], n)[:n]
	rec := c.buf
	binary.LittleEndian.PutUint32(rec[0:], uint32(ts.Unix()))
	binary.LittleEndian.PutUint32(rec[4:], uint32(ts.Nanosecond()/1000))
	binary.LittleEndian.PutUint32(rec[8:], uint32(len(frame)))
	binary.LittleEndian.PutUint32(rec[12:], uint32(len(frame)))
	copy(rec[pcapRecordHdr:], frame)
	if _, err := c.w.Write(rec); err != nil {
		return fmt.Errorf("roce: pcap record: %w", err)
	}
	return nil
}

// WriteUDP writes one frame carrying the UDP datagram payload from src
// to dst. src and dst must both be IPv4 (IPv4-mapped counts as IPv4) or
// both IPv6.
func (c *Pcap) WriteUDP(ts time.Time, src, dst netip.AddrPort, payload []byte) error {
	s, d, v4, ok := family(src, dst)
	if !ok {
		return fmt.Errorf("roce: pcap: addresses %v -> %v not both IPv4 or both IPv6", src, dst)
	}
	ipLen := ip6HdrLen
	if v4 {
		ipLen = ip4HdrLen
	}
	udpLen := udpHdrLen + len(payload)
	if udpLen > pcapMaxUDPFrame || (v4 && ipLen+udpLen > pcapMaxUDPFrame) {
		return fmt.Errorf("roce: pcap: %d-byte UDP payload too large", len(payload))
	}
	frameLen := etherHdrLen + ipLen + udpLen
	n := pcapRecordHdr + frameLen
	c.buf = slices.Grow(c.buf[:0], n)[:n]
	rec := c.buf
	clear(rec)
	binary.LittleEndian.PutUint32(rec[0:], uint32(ts.Unix()))
	binary.LittleEndian.PutUint32(rec[4:], uint32(ts.Nanosecond()/1000))
	binary.LittleEndian.PutUint32(rec[8:], uint32(frameLen))
	binary.LittleEndian.PutUint32(rec[12:], uint32(frameLen))
	f := rec[pcapRecordHdr:]
	copy(f[0:6], pcapMAC(d))
	copy(f[6:12], pcapMAC(s))
	ip := f[etherHdrLen:]
	u := ip[ipLen:]
	binary.BigEndian.PutUint16(u[0:], src.Port())
	binary.BigEndian.PutUint16(u[2:], dst.Port())
	binary.BigEndian.PutUint16(u[4:], uint16(udpLen))
	copy(u[udpHdrLen:], payload)
	if v4 {
		binary.BigEndian.PutUint16(f[12:], etherTypeIPv4)
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:], uint16(ipLen+udpLen))
		binary.BigEndian.PutUint16(ip[6:], pcapFlagsDF)
		ip[8] = pcapDefaultTTL
		ip[9] = pcapIPProtoUDP
		a, b := s.As4(), d.As4()
		copy(ip[12:], a[:])
		copy(ip[16:], b[:])
		binary.BigEndian.PutUint16(ip[10:], ^onesSum(0, ip[:ip4HdrLen]))
	} else {
		binary.BigEndian.PutUint16(f[12:], etherTypeIPv6)
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(udpLen))
		ip[6] = pcapIPProtoUDP
		ip[7] = pcapDefaultTTL
		a, b := s.As16(), d.As16()
		copy(ip[8:], a[:])
		copy(ip[24:], b[:])
		// UDP checksum over the IPv6 pseudo-header (mandatory for IPv6).
		var ph [8]byte
		binary.BigEndian.PutUint32(ph[0:], uint32(udpLen))
		ph[7] = pcapIPProtoUDP
		sum := onesSum(0, ip[8:40])
		sum = onesSum(sum, ph[:])
		sum = onesSum(sum, u[:udpLen])
		cs := ^sum
		if cs == 0 {
			cs = 0xffff
		}
		binary.BigEndian.PutUint16(u[6:], cs)
	}
	if _, err := c.w.Write(rec); err != nil {
		return fmt.Errorf("roce: pcap record: %w", err)
	}
	return nil
}

// pcapMAC returns a locally administered unicast MAC address derived
// from the last four bytes of a.
func pcapMAC(a netip.Addr) []byte {
	b := a.As16()
	return []byte{0x02, 0x00, b[12], b[13], b[14], b[15]}
}

// onesSum adds b to the 16-bit ones' complement sum s (RFC 1071).
func onesSum(s uint16, b []byte) uint16 {
	acc := uint32(s)
	for len(b) >= 2 {
		acc += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint32(b[0]) << 8
	}
	for acc > 0xffff {
		acc = acc&0xffff + acc>>16
	}
	return uint16(acc)
}
