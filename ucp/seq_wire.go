package ucp

// Wire formats of the sequenced channel (seq.go), the failover sync
// (replay.go) and the atomics carried as active messages (atomic_am.go).
const (
	amSeq       = 12 // dst u32, seq u32, ack u32, inner AM id u8, the inner message unchanged
	amSeqAck    = 13 // dst u32, ack u32, flags u8 (seqAckWant: answer with an ack)
	amSync      = 14 // dst u32, delivered u64, flags u8 (syncReply, syncLane), number u32, [syncLane: the failed lane's status u8, its domain, the peer's (u8 + bytes each)]
	amAtomicReq = 15 // dst u32, op id u64, op u8, fetch u8, value u64, compare u64, raddr u64, rkey bundle (u16 + bytes)
	amAtomicRep = 16 // dst u32, op id u64, result u64, status u8
)

const seqHdr = 4 + 4 + 4 + 1

// syncFixed is the length of a sync without the failed lane's names.
const syncFixed = 4 + 8 + 1 + 4

const (
	seqAckWant = 1 // amSeqAck: the sender wants an ack back
	syncReply  = 1 // amSync: the answer to a sync
	syncLane   = 2 // amSync: names the lane the sender failed over from
)

// syncMsg is a failover sync or its answer.
type syncMsg struct {
	dst       uint32
	delivered uint64
	flags     uint8
	// num numbers the sender's failovers and fail-backs (never 0); an
	// answer carries the number of the sync it answers, so a sync sent
	// again is acted on once and an answer to an older one is known
	num uint32
	// the failed lane (syncLane): the status it failed with, the
	// sender's memory domain part name of its iface and of the peer's
	// (mdPartName), which name the lane on both sides
	status        uint8
	local, remote string
}

// seqMsg is a sequenced message as received.
type seqMsg struct {
	dst      uint32
	seq, ack uint32
	id       uint8
	inner    []byte
}

// putSeqHdr writes the header of a sequenced message into b[:seqHdr].
// dst and seq go in one 8-byte store: a short send reads them back as
// one word (sendSeq), which a load spanning two smaller stores would
// stall.
func putSeqHdr(b []byte, dst, seq, ack uint32, id uint8) {
	le.PutUint64(b, uint64(dst)|uint64(seq)<<32)
	le.PutUint32(b[8:], ack)
	b[12] = id
}

func decodeSeq(b []byte) (seqMsg, error) {
	if !seqOK(b) {
		return seqMsg{}, errWire("sequenced message")
	}
	return seqMsg{dst: le.Uint32(b), seq: le.Uint32(b[4:]), ack: le.Uint32(b[8:]), id: b[12], inner: b[seqHdr:]}, nil
}

// seqOK says whether b is a well-formed sequenced message: the receive
// path reads its fields in place (onSeq), decodeSeq into a seqMsg.
func seqOK(b []byte) bool {
	return len(b) >= seqHdr && seqInnerOK(b[12])
}

// seqInnerOK says whether id may travel inside a sequenced message.
func seqInnerOK(id uint8) bool {
	switch id {
	case amEager, amRTS, amATS, amRTR, amATP, amUser, amClose, amUserFrag, amUserRTS, amAtomicReq, amAtomicRep:
		return true
	}
	return false
}

func encodeSeqAck(b []byte, dst, ack uint32, flags uint8) []byte {
	b = le.AppendUint32(b[:0], dst)
	b = le.AppendUint32(b, ack)
	return append(b, flags)
}

func decodeSeqAck(b []byte) (dst, ack uint32, flags uint8, err error) {
	if len(b) != 9 || b[8]&^seqAckWant != 0 {
		return 0, 0, 0, errWire("sequence ack")
	}
	return le.Uint32(b), le.Uint32(b[4:]), b[8], nil
}

func (m *syncMsg) encode(b []byte) []byte {
	b = le.AppendUint32(b[:0], m.dst)
	b = le.AppendUint64(b, m.delivered)
	b = append(b, m.flags)
	b = le.AppendUint32(b, m.num)
	if m.flags&syncLane != 0 {
		b = append(b, m.status)
		b = append(append(b, byte(len(m.local))), m.local...)
		b = append(append(b, byte(len(m.remote))), m.remote...)
	}
	return b
}

func decodeSync(b []byte) (syncMsg, error) {
	if len(b) < syncFixed || b[12]&^(syncReply|syncLane) != 0 || le.Uint32(b[13:]) == 0 {
		return syncMsg{}, errWire("sync")
	}
	m := syncMsg{dst: le.Uint32(b), delivered: le.Uint64(b[4:]), flags: b[12], num: le.Uint32(b[13:])}
	r := reader{b: b[syncFixed:]}
	if m.flags&syncLane != 0 {
		m.status = r.u8()
		m.local = string(r.take(int(r.u8())))
		m.remote = string(r.take(int(r.u8())))
		if r.err || m.local == "" || m.remote == "" || len(m.local) > 64 || len(m.remote) > 64 {
			return syncMsg{}, errWire("sync")
		}
	}
	if len(r.b) != 0 {
		return syncMsg{}, errWire("sync")
	}
	return m, nil
}

// atomicReq is an atomic operation carried as an active message; its op
// id is the sequence number of the message that carries it.
type atomicReq struct {
	dst            uint32
	opid           uint64
	op             uint8 // uct.AtomicOp
	fetch          bool
	value, compare uint64
	raddr          uint64
	rkey           []byte
}

const atomicReqFixed = 4 + 8 + 1 + 1 + 8 + 8 + 8 + 2

func (m *atomicReq) encode(b []byte) []byte {
	b = le.AppendUint32(b[:0], m.dst)
	b = le.AppendUint64(b, m.opid)
	f := byte(0)
	if m.fetch {
		f = 1
	}
	b = append(b, m.op, f)
	b = le.AppendUint64(b, m.value)
	b = le.AppendUint64(b, m.compare)
	b = le.AppendUint64(b, m.raddr)
	b = le.AppendUint16(b, uint16(len(m.rkey)))
	return append(b, m.rkey...)
}

func decodeAtomicReq(b []byte) (atomicReq, error) {
	if len(b) < atomicReqFixed || b[13] > 1 {
		return atomicReq{}, errWire("atomic request")
	}
	m := atomicReq{dst: le.Uint32(b), opid: le.Uint64(b[4:]), op: b[12], fetch: b[13] == 1, value: le.Uint64(b[14:]),
		compare: le.Uint64(b[22:]), raddr: le.Uint64(b[30:])}
	if n := int(le.Uint16(b[38:])); len(b) != atomicReqFixed+n {
		return atomicReq{}, errWire("atomic request")
	}
	m.rkey = b[atomicReqFixed:]
	return m, nil
}

// atomicRep answers an atomicReq.
type atomicRep struct {
	dst    uint32
	opid   uint64
	result uint64
	status uint8 // 0 ok, else a uct.Status
}

func (m *atomicRep) encode(b []byte) []byte {
	b = le.AppendUint32(b[:0], m.dst)
	b = le.AppendUint64(b, m.opid)
	b = le.AppendUint64(b, m.result)
	return append(b, m.status)
}

func decodeAtomicRep(b []byte) (atomicRep, error) {
	if len(b) != 21 {
		return atomicRep{}, errWire("atomic reply")
	}
	return atomicRep{dst: le.Uint32(b), opid: le.Uint64(b[4:]), result: le.Uint64(b[12:]), status: b[20]}, nil
}
