package roce

import "strconv"

// Opcode is the BTH opcode byte. The upper three bits select the transport
// (000 = Reliable Connection); only RC opcodes are supported by [Decode].
type Opcode uint8

// RC opcodes, IBTA values (volume 1, table 38).
const (
	OpSendFirst          Opcode = 0x00
	OpSendMiddle         Opcode = 0x01
	OpSendLast           Opcode = 0x02
	OpSendLastImm        Opcode = 0x03
	OpSendOnly           Opcode = 0x04
	OpSendOnlyImm        Opcode = 0x05
	OpWriteFirst         Opcode = 0x06
	OpWriteMiddle        Opcode = 0x07
	OpWriteLast          Opcode = 0x08
	OpWriteLastImm       Opcode = 0x09
	OpWriteOnly          Opcode = 0x0a
	OpWriteOnlyImm       Opcode = 0x0b
	OpReadRequest        Opcode = 0x0c
	OpReadResponseFirst  Opcode = 0x0d
	OpReadResponseMiddle Opcode = 0x0e
	OpReadResponseLast   Opcode = 0x0f
	OpReadResponseOnly   Opcode = 0x10
	OpAcknowledge        Opcode = 0x11
	OpAtomicAcknowledge  Opcode = 0x12
	OpCompareSwap        Opcode = 0x13
	OpFetchAdd           Opcode = 0x14
	OpSendLastInvalidate Opcode = 0x16
	OpSendOnlyInvalidate Opcode = 0x17

	opLimit = 0x18 // first value past the table
)

// opcode property bits.
const (
	fValid uint16 = 1 << iota
	fRETH
	fAETH
	fAtomicETH
	fAtomicAckETH
	fImm
	fIETH
	fPayload
	fFirst
	fMiddle
	fLast
	fOnly
	fSend
	fWrite
	fReadReq
	fReadResp
)

type opInfo struct {
	name  string
	flags uint16
	hlen  uint8 // header length including BTH, excluding ICRC
}

var opTable = func() [opLimit]opInfo {
	var t [opLimit]opInfo
	set := func(o Opcode, name string, flags uint16) {
		hl := BTHLen
		if flags&fRETH != 0 {
			hl += RETHLen
		}
		if flags&fAtomicETH != 0 {
			hl += AtomicETHLen
		}
		if flags&fAETH != 0 {
			hl += AETHLen
		}
		if flags&fAtomicAckETH != 0 {
			hl += AtomicAckETHLen
		}
		if flags&fImm != 0 {
			hl += ImmLen
		}
		if flags&fIETH != 0 {
			hl += IETHLen
		}
		t[o] = opInfo{name: name, flags: flags | fValid, hlen: uint8(hl)}
	}
	const p = fPayload
	set(OpSendFirst, "SEND_FIRST", fSend|fFirst|p)
	set(OpSendMiddle, "SEND_MIDDLE", fSend|fMiddle|p)
	set(OpSendLast, "SEND_LAST", fSend|fLast|p)
	set(OpSendLastImm, "SEND_LAST_WITH_IMMEDIATE", fSend|fLast|fImm|p)
	set(OpSendOnly, "SEND_ONLY", fSend|fOnly|p)
	set(OpSendOnlyImm, "SEND_ONLY_WITH_IMMEDIATE", fSend|fOnly|fImm|p)
	set(OpWriteFirst, "RDMA_WRITE_FIRST", fWrite|fFirst|fRETH|p)
	set(OpWriteMiddle, "RDMA_WRITE_MIDDLE", fWrite|fMiddle|p)
	set(OpWriteLast, "RDMA_WRITE_LAST", fWrite|fLast|p)
	set(OpWriteLastImm, "RDMA_WRITE_LAST_WITH_IMMEDIATE", fWrite|fLast|fImm|p)
	set(OpWriteOnly, "RDMA_WRITE_ONLY", fWrite|fOnly|fRETH|p)
	set(OpWriteOnlyImm, "RDMA_WRITE_ONLY_WITH_IMMEDIATE", fWrite|fOnly|fRETH|fImm|p)
	set(OpReadRequest, "RDMA_READ_REQUEST", fReadReq|fOnly|fRETH)
	set(OpReadResponseFirst, "RDMA_READ_RESPONSE_FIRST", fReadResp|fFirst|fAETH|p)
	set(OpReadResponseMiddle, "RDMA_READ_RESPONSE_MIDDLE", fReadResp|fMiddle|p)
	set(OpReadResponseLast, "RDMA_READ_RESPONSE_LAST", fReadResp|fLast|fAETH|p)
	set(OpReadResponseOnly, "RDMA_READ_RESPONSE_ONLY", fReadResp|fOnly|fAETH|p)
	set(OpAcknowledge, "ACKNOWLEDGE", fOnly|fAETH)
	set(OpAtomicAcknowledge, "ATOMIC_ACKNOWLEDGE", fOnly|fAETH|fAtomicAckETH)
	set(OpCompareSwap, "COMPARE_SWAP", fOnly|fAtomicETH)
	set(OpFetchAdd, "FETCH_ADD", fOnly|fAtomicETH)
	set(OpSendLastInvalidate, "SEND_LAST_WITH_INVALIDATE", fSend|fLast|fIETH|p)
	set(OpSendOnlyInvalidate, "SEND_ONLY_WITH_INVALIDATE", fSend|fOnly|fIETH|p)
	return t
}()

func (o Opcode) info() opInfo {
	if o >= opLimit {
		return opInfo{}
	}
	return opTable[o]
}

func (o Opcode) has(f uint16) bool { return o.info().flags&f != 0 }

// String returns the IBTA name of an RC opcode ("RDMA_WRITE_ONLY"), as
// Wireshark prints it, or "Opcode(0xNN)" for anything else.
func (o Opcode) String() string {
	if i := o.info(); i.flags != 0 {
		return i.name
	}
	return "Opcode(0x" + strconv.FormatUint(uint64(o), 16) + ")"
}

// Valid reports whether o is an RC opcode this package encodes and decodes.
func (o Opcode) Valid() bool { return o.has(fValid) }

// HasRETH reports whether packets with opcode o carry an RDMA extended header.
func (o Opcode) HasRETH() bool { return o.has(fRETH) }

// HasAETH reports whether packets with opcode o carry an ACK extended header.
func (o Opcode) HasAETH() bool { return o.has(fAETH) }

// HasAtomicETH reports whether packets with opcode o carry an atomic extended header.
func (o Opcode) HasAtomicETH() bool { return o.has(fAtomicETH) }

// HasAtomicAckETH reports whether packets with opcode o carry the original
// remote value of an atomic (ATOMIC ACKNOWLEDGE).
func (o Opcode) HasAtomicAckETH() bool { return o.has(fAtomicAckETH) }

// HasImm reports whether packets with opcode o carry immediate data.
func (o Opcode) HasImm() bool { return o.has(fImm) }

// HasIETH reports whether packets with opcode o carry an invalidate
// extended header (the R_Key to invalidate).
func (o Opcode) HasIETH() bool { return o.has(fIETH) }

// HasPayload reports whether packets with opcode o may carry payload.
func (o Opcode) HasPayload() bool { return o.has(fPayload) }

// IsFirst reports whether o is the first packet of a multi-packet message.
func (o Opcode) IsFirst() bool { return o.has(fFirst) }

// IsMiddle reports whether o is a middle packet of a multi-packet message.
func (o Opcode) IsMiddle() bool { return o.has(fMiddle) }

// IsLast reports whether o is the last packet of a multi-packet message.
func (o Opcode) IsLast() bool { return o.has(fLast) }

// IsOnly reports whether o is a single-packet message (this includes READ
// REQUEST, ACKNOWLEDGE and the atomics).
func (o Opcode) IsOnly() bool { return o.has(fOnly) }

// IsSend reports whether o is one of the SEND opcodes.
func (o Opcode) IsSend() bool { return o.has(fSend) }

// IsWrite reports whether o is one of the RDMA WRITE opcodes.
func (o Opcode) IsWrite() bool { return o.has(fWrite) }

// IsReadRequest reports whether o is RDMA READ REQUEST.
func (o Opcode) IsReadRequest() bool { return o.has(fReadReq) }

// IsReadResponse reports whether o is one of the RDMA READ RESPONSE opcodes.
func (o Opcode) IsReadResponse() bool { return o.has(fReadResp) }

// IsAtomic reports whether o is an atomic request (COMPARE SWAP, FETCH ADD).
func (o Opcode) IsAtomic() bool { return o.has(fAtomicETH) }

// IsRequest reports whether o is sent by the requester (SEND, WRITE, READ
// REQUEST, atomics), as opposed to a response (READ RESPONSE,
// ACKNOWLEDGE, ATOMIC ACKNOWLEDGE).
func (o Opcode) IsRequest() bool {
	return o.has(fSend | fWrite | fReadReq | fAtomicETH)
}

// IsResponse reports whether o is sent by the responder.
func (o Opcode) IsResponse() bool {
	return o.Valid() && !o.IsRequest()
}
