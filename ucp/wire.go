package ucp

import (
	"encoding/binary"
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// uct AM ids used by ucp. Every message but wireup starts with (or, for
// eager, carries after the tag) the receiver's endpoint id, so the
// receiver finds the sending endpoint with one slice index.
const (
	amWireup    = 1  // kind u8, sender ep id u32, receiver ep id u32, lane-bind token u64, worker address
	amEager     = 2  // tag u64 (native order, the AMShort header), dst u32, data
	amRTS       = 3  // tag u64, dst u32, sreq u64, length u64, raddr u64, rkey (u16 + bytes; empty: send RTR)
	amATS       = 4  // dst u32, sreq u64, status u8
	amRTR       = 5  // dst u32, sreq u64, rreq u64, raddr u64, length u64, rkey (u16 + bytes)
	amATP       = 6  // dst u32, rreq u64, status u8
	amUser      = 7  // dst u32, id u16, hdrlen u16, hdr, data
	amKeepalive = 8  // dst u32, the sender's keepalive interval in ms u32
	amClose     = 9  // dst u32
	amUserFrag  = 10 // dst u32, id u16, hdrlen u16, mid u64, total u64, offset u64, hdr (offset 0 only), data
	amUserRTS   = 11 // dst u32, id u16, hdrlen u16, sreq u64, length u64, raddr u64, rkey (u16 + bytes), hdr
	// 12-19: the sequenced channel (failover); 20-23: the lane set
	amLaneBind   = 20 // dst u32, the sender's lane-bind token u64 (lanebind_token.go)
	amLaneStatus = 21 // dst u32, status u8 (1 down, 2 up), the sender's iface index u8 (linkwatch.go)
)

const (
	wireupReq = 1
	wireupRep = 2
)

const eagerHdr = 12 // tag + dst

var ne = binary.NativeEndian
var le = binary.LittleEndian

func errWire(what string) error {
	return fmt.Errorf("ucp wire: malformed %s: %w", what, uct.ErrInvalidParam)
}

// wireup is a connection request or reply.
type wireup struct {
	kind     uint8
	src, dst uint32 // sender's endpoint id, receiver's (reply only)
	token    uint64 // the sender's lane-bind token (lanebind_token.go)
	addr     []byte // sender's packed worker address
}

const wireupFixed = 1 + 4 + 4 + 8

func (m *wireup) encode() []byte {
	b := make([]byte, wireupFixed, wireupFixed+len(m.addr))
	b[0] = m.kind
	le.PutUint32(b[1:], m.src)
	le.PutUint32(b[5:], m.dst)
	le.PutUint64(b[9:], m.token)
	return append(b, m.addr...)
}

func decodeWireup(b []byte) (wireup, error) {
	if len(b) < wireupFixed || (b[0] != wireupReq && b[0] != wireupRep) {
		return wireup{}, errWire("wireup")
	}
	return wireup{kind: b[0], src: le.Uint32(b[1:]), dst: le.Uint32(b[5:]), token: le.Uint64(b[9:]), addr: b[wireupFixed:]}, nil
}

func putEagerHdr(b []byte, tag uint64, dst uint32) {
	ne.PutUint64(b, tag)
	le.PutUint32(b[8:], dst)
}

// decodeEager returns the tag, the receiver's endpoint id and the data.
func decodeEager(b []byte) (tag uint64, dst uint32, data []byte, err error) {
	tag, dst, data, ok := splitEager(b)
	if !ok {
		return 0, 0, nil, errWire("eager")
	}
	return tag, dst, data, nil
}

// splitEager is decodeEager without the error value: small enough to be
// inlined into the eager receive path, which only counts a malformed
// message.
func splitEager(b []byte) (tag uint64, dst uint32, data []byte, ok bool) {
	if len(b) < eagerHdr {
		return 0, 0, nil, false
	}
	return ne.Uint64(b), le.Uint32(b[8:]), b[eagerHdr:], true
}

// rts announces a rendezvous send.
type rts struct {
	tag    uint64
	dst    uint32
	sreq   uint64
	length uint64
	raddr  uint64
	rkey   []byte
}

const rtsFixed = 8 + 4 + 8 + 8 + 8 + 2

func (m *rts) encode(b []byte) []byte {
	b = b[:0]
	b = ne.AppendUint64(b, m.tag)
	b = le.AppendUint32(b, m.dst)
	b = le.AppendUint64(b, m.sreq)
	b = le.AppendUint64(b, m.length)
	b = le.AppendUint64(b, m.raddr)
	b = le.AppendUint16(b, uint16(len(m.rkey)))
	return append(b, m.rkey...)
}

func decodeRTS(b []byte) (rts, error) {
	if len(b) < rtsFixed {
		return rts{}, errWire("rts")
	}
	m := rts{tag: ne.Uint64(b), dst: le.Uint32(b[8:]), sreq: le.Uint64(b[12:]), length: le.Uint64(b[20:]), raddr: le.Uint64(b[28:])}
	n := int(le.Uint16(b[36:]))
	if len(b) != rtsFixed+n || m.length > 1<<48 {
		return rts{}, errWire("rts")
	}
	m.rkey = b[rtsFixed:]
	return m, nil
}

// ack is ATS (sender's request done) or ATP (receiver's data placed).
type ack struct {
	dst    uint32
	req    uint64
	status uint8 // 0 ok, else a uct.Status
}

func (m *ack) encode(b []byte) []byte {
	b = le.AppendUint32(b[:0], m.dst)
	b = le.AppendUint64(b, m.req)
	return append(b, m.status)
}

func decodeAck(b []byte) (ack, error) {
	if len(b) != 13 {
		return ack{}, errWire("ack")
	}
	return ack{dst: le.Uint32(b), req: le.Uint64(b[4:]), status: b[12]}, nil
}

// rtr is the receiver's ready-to-receive for RndvPut.
type rtr struct {
	dst    uint32
	sreq   uint64
	rreq   uint64
	raddr  uint64
	length uint64
	rkey   []byte
}

const rtrFixed = 4 + 8 + 8 + 8 + 8 + 2

func (m *rtr) encode(b []byte) []byte {
	b = le.AppendUint32(b[:0], m.dst)
	b = le.AppendUint64(b, m.sreq)
	b = le.AppendUint64(b, m.rreq)
	b = le.AppendUint64(b, m.raddr)
	b = le.AppendUint64(b, m.length)
	b = le.AppendUint16(b, uint16(len(m.rkey)))
	return append(b, m.rkey...)
}

func decodeRTR(b []byte) (rtr, error) {
	if len(b) < rtrFixed {
		return rtr{}, errWire("rtr")
	}
	m := rtr{dst: le.Uint32(b), sreq: le.Uint64(b[4:]), rreq: le.Uint64(b[12:]), raddr: le.Uint64(b[20:]), length: le.Uint64(b[28:])}
	n := int(le.Uint16(b[36:]))
	if len(b) != rtrFixed+n {
		return rtr{}, errWire("rtr")
	}
	m.rkey = b[rtrFixed:]
	return m, nil
}

const userHdr = 4 + 2 + 2

func putUserHdr(b []byte, dst uint32, id uint16, hdrlen int) {
	le.PutUint32(b, dst)
	le.PutUint16(b[4:], id)
	le.PutUint16(b[6:], uint16(hdrlen))
}

// decodeUser returns a user AM's receiver endpoint id, AM id, header, data.
func decodeUser(b []byte) (dst uint32, id uint16, hdr, data []byte, err error) {
	if len(b) < userHdr {
		return 0, 0, nil, nil, errWire("am")
	}
	n := int(le.Uint16(b[6:]))
	if len(b) < userHdr+n {
		return 0, 0, nil, nil, errWire("am")
	}
	return le.Uint32(b), le.Uint16(b[4:]), b[userHdr : userHdr+n], b[userHdr+n:], nil
}

// decodeKeepalive decodes a heartbeat: the receiver's endpoint id and the
// sender's keepalive interval in milliseconds.
func decodeKeepalive(b []byte) (dst, ms uint32, err error) {
	if len(b) != 8 {
		return 0, 0, errWire("keepalive")
	}
	return le.Uint32(b), le.Uint32(b[4:]), nil
}

// decodeDst decodes close messages.
func decodeDst(b []byte) (uint32, error) {
	if len(b) != 4 {
		return 0, errWire("control")
	}
	return le.Uint32(b), nil
}

// userFrag is one fragment of an active message larger than one
// fragment; the first (offset 0) carries the user header.
type userFrag struct {
	dst   uint32
	id    uint16
	mid   uint64 // the sender's message id
	total uint64 // data length of the whole message
	off   uint64 // offset of this fragment's data
	hdr   []byte
	data  []byte // decode only; sent as the AMBcopy payload
}

const userFragHdr = 4 + 2 + 2 + 8 + 8 + 8

// encode appends the fragment's header and user header to b.
func (m *userFrag) encode(b []byte) []byte {
	b = le.AppendUint32(b, m.dst)
	b = le.AppendUint16(b, m.id)
	b = le.AppendUint16(b, uint16(len(m.hdr)))
	b = le.AppendUint64(b, m.mid)
	b = le.AppendUint64(b, m.total)
	b = le.AppendUint64(b, m.off)
	return append(b, m.hdr...)
}

func decodeUserFrag(b []byte) (userFrag, error) {
	if len(b) < userFragHdr {
		return userFrag{}, errWire("am fragment")
	}
	m := userFrag{dst: le.Uint32(b), id: le.Uint16(b[4:]), mid: le.Uint64(b[8:]), total: le.Uint64(b[16:]), off: le.Uint64(b[24:])}
	n := int(le.Uint16(b[6:]))
	if len(b) < userFragHdr+n || n > 0 && m.off != 0 || m.off > m.total || m.total > 1<<48 {
		return userFrag{}, errWire("am fragment")
	}
	m.hdr = b[userFragHdr : userFragHdr+n]
	m.data = b[userFragHdr+n:]
	return m, nil
}

// userRTS announces a rendezvous active message.
type userRTS struct {
	dst    uint32
	id     uint16
	sreq   uint64
	length uint64
	raddr  uint64
	rkey   []byte
	hdr    []byte
}

const userRTSFixed = 4 + 2 + 2 + 8 + 8 + 8 + 2

func (m *userRTS) encode(b []byte) []byte {
	b = le.AppendUint32(b[:0], m.dst)
	b = le.AppendUint16(b, m.id)
	b = le.AppendUint16(b, uint16(len(m.hdr)))
	b = le.AppendUint64(b, m.sreq)
	b = le.AppendUint64(b, m.length)
	b = le.AppendUint64(b, m.raddr)
	b = le.AppendUint16(b, uint16(len(m.rkey)))
	b = append(b, m.rkey...)
	return append(b, m.hdr...)
}

func decodeUserRTS(b []byte) (userRTS, error) {
	if len(b) < userRTSFixed {
		return userRTS{}, errWire("am rts")
	}
	m := userRTS{dst: le.Uint32(b), id: le.Uint16(b[4:]), sreq: le.Uint64(b[8:]), length: le.Uint64(b[16:]), raddr: le.Uint64(b[24:])}
	nh, nk := int(le.Uint16(b[6:])), int(le.Uint16(b[32:]))
	if len(b) != userRTSFixed+nk+nh || m.length > 1<<48 {
		return userRTS{}, errWire("am rts")
	}
	m.rkey = b[userRTSFixed : userRTSFixed+nk]
	m.hdr = b[userRTSFixed+nk:]
	return m, nil
}
