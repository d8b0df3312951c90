package roce

import "strconv"

// AETH is the ACK extended transport header: an 8-bit syndrome and the
// 24-bit message sequence number of the responder.
//
// Syndrome bits 6..5 give the kind ([AckKind]); bits 4..0 are the credit
// code of an ACK, the timer code of an RNR NAK ([RNRTimer]) or the NAK
// code. Bit 7 is reserved.
type AETH struct {
	Syndrome uint8
	MSN      uint32 // 24 bits
}

// AckKind is the kind of an AETH.
type AckKind uint8

// AETH kinds (syndrome bits 6..5).
const (
	AckACK      AckKind = 0
	AckRNRNak   AckKind = 1
	AckReserved AckKind = 2
	AckNAK      AckKind = 3
)

func (k AckKind) String() string {
	switch k {
	case AckACK:
		return "ACK"
	case AckRNRNak:
		return "RNR NAK"
	case AckNAK:
		return "NAK"
	}
	return "reserved AETH kind " + strconv.Itoa(int(k))
}

// NAK codes (syndrome bits 4..0 of a NAK).
const (
	NAKPSNSequenceError       uint8 = 0
	NAKInvalidRequest         uint8 = 1
	NAKRemoteAccessError      uint8 = 2
	NAKRemoteOperationalError uint8 = 3
	NAKInvalidRDRequest       uint8 = 4
)

// CreditsInvalid is the ACK credit code meaning "no end-to-end flow
// control" (what rxe sends: syndrome 0x1f).
const CreditsInvalid uint8 = 0x1f

const (
	syndromeKindShift       = 5
	syndromeValueMask uint8 = 0x1f
	syndromeKindMask  uint8 = 0x60
)

// ACK returns an AETH acknowledging up to msn with the given 5-bit credit
// code ([CreditsInvalid] for "no flow control", as rxe sends).
func ACK(credits uint8, msn uint32) AETH {
	return AETH{Syndrome: uint8(AckACK)<<syndromeKindShift | credits&syndromeValueMask, MSN: msn & PSNMask}
}

// RNRNak returns an AETH for a receiver-not-ready NAK asking the
// requester to wait [RNRTimer](timerCode) before retrying.
func RNRNak(timerCode uint8, msn uint32) AETH {
	return AETH{Syndrome: uint8(AckRNRNak)<<syndromeKindShift | timerCode&syndromeValueMask, MSN: msn & PSNMask}
}

// NAK returns an AETH for a NAK with the given code (NAKPSNSequenceError ...).
func NAK(code uint8, msn uint32) AETH {
	return AETH{Syndrome: uint8(AckNAK)<<syndromeKindShift | code&syndromeValueMask, MSN: msn & PSNMask}
}

// Kind returns the kind of a (ACK, RNR NAK, NAK or reserved).
func (a AETH) Kind() AckKind { return AckKind(a.Syndrome & syndromeKindMask >> syndromeKindShift) }

// Credits returns the 5-bit credit code of an ACK (see [CreditCount]).
func (a AETH) Credits() uint8 { return a.Syndrome & syndromeValueMask }

// RNRTimer returns the 5-bit timer code of an RNR NAK (see [RNRTimer]).
func (a AETH) RNRTimer() uint8 { return a.Syndrome & syndromeValueMask }

// NAKCode returns the NAK code of a NAK.
func (a AETH) NAKCode() uint8 { return a.Syndrome & syndromeValueMask }

var creditTable = [31]int{0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768}

// CreditCount decodes an ACK credit code into the number of receive WQEs
// it advertises (IBTA table 45). ok is false for [CreditsInvalid] (and
// larger codes): the responder does no end-to-end flow control.
func CreditCount(code uint8) (n int, ok bool) {
	if int(code) >= len(creditTable) {
		return 0, false
	}
	return creditTable[code], true
}
