package rc

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"

	"github.com/ucgo/ucgo/uct"
)

// Connection manager messages. They travel over a TCP connection from the
// connecting iface to the peer's CM port, framed as
//
//	magic "RCCM"(4) version(1) type(1) body length(2) body
//
// with every integer big-endian. REQ asks for a QP and carries the
// requester's side of the path and its local ACK timeout, which the
// passive QP takes too, so that both directions of the connection
// tolerate the same silence of the peer before they fail; REP answers
// with the new QP; REJ refuses; DREQ from the requester tells the passive side that the endpoint was
// closed, so it destroys its QP; DREQ from the passive side tells the
// requester that the peer iface closed (a connection that ends without it
// means the peer process died).
const (
	cmMagic  = 0x5243434d // "RCCM"
	cmHdrLen = 8

	cmREQ  = 1
	cmREP  = 2
	cmREJ  = 3
	cmDREQ = 4
	cmDOWN = 5 // DREQ because the sender's device was disabled

	cmREQLen  = 16 + 2 + 4 + 4 + 2 + 8 + 8 + 2 + 1 // gid udp qpn psn mtu nonce dstnonce window acktimeout
	cmREPLen  = 4 + 4 + 2 + 8 + 2                  // qpn psn mtu nonce window
	cmREJLen  = 1
	cmDREQLen = 4
	cmDOWNLen = 4
	cmMaxBody = cmREQLen
)

// REJ reasons.
const (
	rejStaleNonce = 1 // the address names an iface that no longer exists
	rejNoResource = 2 // the passive side could not create a QP
	rejBadRequest = 3 // the request was malformed or incompatible
	rejClosed     = 4 // the iface is closing
)

// cmMsg is one decoded CM message. Only the fields of its Type are set.
type cmMsg struct {
	Type     uint8
	GID      netip.Addr // REQ: requester's IPv4 address
	UDPPort  uint16     // REQ: requester's RoCEv2 UDP port
	QPN      uint32     // REQ, REP: sender's QP number; DREQ, DOWN: the passive QP
	PSN      uint32     // REQ, REP: sender's initial send PSN
	MTU      uint16     // REQ, REP: path MTU in bytes
	Nonce    uint64     // REQ, REP: sender iface's nonce
	DstNonce uint64     // REQ: nonce of the address the requester dialled
	Window   uint16     // REQ, REP: AM credits the sender grants its peer
	// AckTimeout is the requester's local ACK timeout exponent (REQ):
	// 4.096 µs · 2^AckTimeout, 1..31.
	AckTimeout uint8
	Reason     uint8 // REJ
}

func validMTU(m uint16) bool {
	switch m {
	case 256, 512, 1024, 2048, 4096:
		return true
	}
	return false
}

// encode returns the framed message.
func (m *cmMsg) encode() []byte {
	var body []byte
	switch m.Type {
	case cmREQ:
		body = make([]byte, cmREQLen)
		ip := m.GID.As16()
		copy(body[0:16], ip[:])
		binary.BigEndian.PutUint16(body[16:], m.UDPPort)
		binary.BigEndian.PutUint32(body[18:], m.QPN)
		binary.BigEndian.PutUint32(body[22:], m.PSN)
		binary.BigEndian.PutUint16(body[26:], m.MTU)
		binary.BigEndian.PutUint64(body[28:], m.Nonce)
		binary.BigEndian.PutUint64(body[36:], m.DstNonce)
		binary.BigEndian.PutUint16(body[44:], m.Window)
		body[46] = m.AckTimeout
	case cmREP:
		body = make([]byte, cmREPLen)
		binary.BigEndian.PutUint32(body[0:], m.QPN)
		binary.BigEndian.PutUint32(body[4:], m.PSN)
		binary.BigEndian.PutUint16(body[8:], m.MTU)
		binary.BigEndian.PutUint64(body[10:], m.Nonce)
		binary.BigEndian.PutUint16(body[18:], m.Window)
	case cmREJ:
		body = []byte{m.Reason}
	case cmDREQ, cmDOWN:
		body = binary.BigEndian.AppendUint32(nil, m.QPN)
	}
	b := make([]byte, cmHdrLen, cmHdrLen+len(body))
	binary.BigEndian.PutUint32(b[0:], cmMagic)
	b[4] = cmVersion
	b[5] = m.Type
	binary.BigEndian.PutUint16(b[6:], uint16(len(body)))
	return append(b, body...)
}

// decodeCMHeader checks a frame header and returns the type and body length.
func decodeCMHeader(h []byte) (typ uint8, n int, err error) {
	if len(h) < cmHdrLen {
		return 0, 0, fmt.Errorf("rc cm: header of %d bytes: %w", len(h), uct.ErrInvalidParam)
	}
	if m := binary.BigEndian.Uint32(h); m != cmMagic {
		return 0, 0, fmt.Errorf("rc cm: bad magic %#x: %w", m, uct.ErrInvalidParam)
	}
	if h[4] != cmVersion {
		return 0, 0, fmt.Errorf("rc cm: version %d, want %d: %w", h[4], cmVersion, uct.ErrInvalidParam)
	}
	typ, n = h[5], int(binary.BigEndian.Uint16(h[6:]))
	want := map[uint8]int{cmREQ: cmREQLen, cmREP: cmREPLen, cmREJ: cmREJLen, cmDREQ: cmDREQLen, cmDOWN: cmDOWNLen}[typ]
	if want == 0 {
		return 0, 0, fmt.Errorf("rc cm: unknown message type %d: %w", typ, uct.ErrInvalidParam)
	}
	if n != want {
		return 0, 0, fmt.Errorf("rc cm: type %d with body of %d bytes, want %d: %w", typ, n, want, uct.ErrInvalidParam)
	}
	return typ, n, nil
}

// decodeCM parses one framed message that must fill b exactly. Errors wrap
// uct.ErrInvalidParam; it never panics.
func decodeCM(b []byte) (cmMsg, error) {
	typ, n, err := decodeCMHeader(b)
	if err != nil {
		return cmMsg{}, err
	}
	if len(b) != cmHdrLen+n {
		return cmMsg{}, fmt.Errorf("rc cm: frame of %d bytes, header says %d: %w", len(b), cmHdrLen+n, uct.ErrInvalidParam)
	}
	return decodeCMBody(typ, b[cmHdrLen:])
}

func decodeCMBody(typ uint8, body []byte) (cmMsg, error) {
	m := cmMsg{Type: typ}
	bad := func(format string, args ...any) (cmMsg, error) {
		return cmMsg{}, fmt.Errorf("rc cm: "+format+": %w", append(args, uct.ErrInvalidParam)...)
	}
	switch typ {
	case cmREQ:
		ip := netip.AddrFrom16([16]byte(body[0:16]))
		if !ip.Is4In6() {
			return bad("REQ GID %s is not IPv4-mapped", ip)
		}
		m.GID = ip.Unmap()
		m.UDPPort = binary.BigEndian.Uint16(body[16:])
		m.QPN = binary.BigEndian.Uint32(body[18:])
		m.PSN = binary.BigEndian.Uint32(body[22:])
		m.MTU = binary.BigEndian.Uint16(body[26:])
		m.Nonce = binary.BigEndian.Uint64(body[28:])
		m.DstNonce = binary.BigEndian.Uint64(body[36:])
		m.Window = binary.BigEndian.Uint16(body[44:])
		m.AckTimeout = body[46]
		if m.UDPPort == 0 {
			return bad("REQ UDP port 0")
		}
		if m.AckTimeout == 0 || m.AckTimeout > 31 {
			return bad("REQ local ACK timeout %d", m.AckTimeout)
		}
	case cmREP:
		m.QPN = binary.BigEndian.Uint32(body[0:])
		m.PSN = binary.BigEndian.Uint32(body[4:])
		m.MTU = binary.BigEndian.Uint16(body[8:])
		m.Nonce = binary.BigEndian.Uint64(body[10:])
		m.Window = binary.BigEndian.Uint16(body[18:])
	case cmREJ:
		m.Reason = body[0]
		if m.Reason < rejStaleNonce || m.Reason > rejClosed {
			return bad("REJ reason %d", m.Reason)
		}
		return m, nil
	case cmDREQ, cmDOWN:
		m.QPN = binary.BigEndian.Uint32(body)
	}
	if m.QPN == 0 || m.QPN > 0xffffff {
		return bad("QPN %#x out of range", m.QPN)
	}
	if typ == cmDREQ || typ == cmDOWN {
		return m, nil
	}
	if m.PSN > 0xffffff {
		return bad("PSN %#x out of range", m.PSN)
	}
	if !validMTU(m.MTU) {
		return bad("MTU %d", m.MTU)
	}
	if m.Window == 0 {
		return bad("credit window 0")
	}
	return m, nil
}

// readCM reads one framed message from r.
func readCM(r io.Reader) (cmMsg, error) {
	var buf [cmHdrLen + cmMaxBody]byte
	if _, err := io.ReadFull(r, buf[:cmHdrLen]); err != nil {
		return cmMsg{}, err
	}
	typ, n, err := decodeCMHeader(buf[:cmHdrLen])
	if err != nil {
		return cmMsg{}, err
	}
	if _, err := io.ReadFull(r, buf[cmHdrLen:cmHdrLen+n]); err != nil {
		return cmMsg{}, err
	}
	return decodeCMBody(typ, buf[cmHdrLen:cmHdrLen+n])
}
