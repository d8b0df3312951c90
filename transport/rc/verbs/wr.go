package verbs

import "fmt"

// SGE is one scatter/gather element (ibv_sge): Length bytes at Addr inside
// the memory region whose local key is LKey. Use [MR.SGE] to build one.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// WROpcode is the operation of a send work request (ibv_wr_opcode).
type WROpcode uint8

// Send work request opcodes.
const (
	WRSend WROpcode = iota
	WRSendWithImm
	WRRDMAWrite
	WRRDMAWriteWithImm
	WRRDMARead
	WRAtomicCmpAndSwp
	WRAtomicFetchAndAdd
)

var wrOpNames = [...]string{"SEND", "SEND_WITH_IMM", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "RDMA_READ", "ATOMIC_CMP_AND_SWP", "ATOMIC_FETCH_AND_ADD"}

func (o WROpcode) String() string {
	if int(o) < len(wrOpNames) {
		return wrOpNames[o]
	}
	return fmt.Sprintf("wr-opcode(%d)", int(o))
}

func (o WROpcode) isAtomic() bool { return o == WRAtomicCmpAndSwp || o == WRAtomicFetchAndAdd }
func (o WROpcode) isRead() bool   { return o == WRRDMARead }

// needsResponse: the operation completes on a response carrying data
// (READ responses, atomic ACK), not on a plain ACK.
func (o WROpcode) needsResponse() bool { return o.isRead() || o.isAtomic() }

// SendFlags are the flags of a send work request (ibv_send_flags).
type SendFlags uint8

const (
	// SendFence waits for outstanding READs and atomics before this WR.
	SendFence SendFlags = 1 << iota
	// SendSignaled asks for a work completion on success.
	SendSignaled
	// SendSolicited sets the solicited event bit of the last packet.
	SendSolicited
	// SendInline copies the data at post time; the SGEs' LKeys are not
	// checked and the buffers can be reused when PostSend returns.
	SendInline
)

// SendWR is a send work request (ibv_send_wr).
type SendWR struct {
	ID     uint64
	Opcode WROpcode
	Flags  SendFlags
	SG     []SGE
	// Imm is the immediate data of *_WITH_IMM (big-endian on the wire,
	// delivered as given).
	Imm uint32
	// RemoteAddr and RKey name the remote memory of RDMA and atomic WRs.
	RemoteAddr uint64
	RKey       uint32
	// CompareAdd is the compare value of CMP_AND_SWP or the addend of
	// FETCH_AND_ADD; Swap is CMP_AND_SWP's swap value.
	CompareAdd uint64
	Swap       uint64
}

// RecvWR is a receive work request (ibv_recv_wr).
type RecvWR struct {
	ID uint64
	SG []SGE
}

// WCStatus is the status of a work completion (ibv_wc_status).
type WCStatus uint8

// Work completion statuses, numbered as in ibv_wc_status.
const (
	WCSuccess WCStatus = iota
	WCLocLenErr
	WCLocQPOpErr
	WCLocEECOpErr
	WCLocProtErr
	WCWRFlushErr
	WCMWBindErr
	WCBadRespErr
	WCLocAccessErr
	WCRemInvReqErr
	WCRemAccessErr
	WCRemOpErr
	WCRetryExcErr
	WCRNRRetryExcErr
	WCLocRDDViolErr
	WCRemInvRDReqErr
	WCRemAbortErr
	WCInvEECNErr
	WCInvEECStateErr
	WCFatalErr
	WCRespTimeoutErr
	WCGeneralErr
)

var wcStatusNames = [...]string{
	"success", "local length error", "local QP operation error", "local EE context operation error",
	"local protection error", "Work Request Flushed Error", "memory management operation error",
	"bad response error", "local access error", "remote invalid request error", "remote access error",
	"remote operation error", "transport retry counter exceeded", "RNR retry counter exceeded",
	"local RDD violation error", "remote invalid RD request", "aborted error", "invalid EE context number",
	"invalid EE context state", "fatal error", "response timeout error", "general error",
}

func (s WCStatus) String() string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return fmt.Sprintf("wc-status(%d)", int(s))
}

// Error makes a status usable as an error value (never for WCSuccess).
func (s WCStatus) Error() string { return s.String() }

// WCOpcode is the operation of a work completion (ibv_wc_opcode).
type WCOpcode uint8

// Work completion opcodes, numbered as in ibv_wc_opcode.
const (
	WCSend WCOpcode = iota
	WCRDMAWrite
	WCRDMARead
	WCCompSwap
	WCFetchAdd
	WCBindMW
	WCRecv WCOpcode = 128 + iota - 6
	WCRecvRDMAWithImm
)

func (o WCOpcode) String() string {
	switch o {
	case WCSend:
		return "SEND"
	case WCRDMAWrite:
		return "RDMA_WRITE"
	case WCRDMARead:
		return "RDMA_READ"
	case WCCompSwap:
		return "COMP_SWAP"
	case WCFetchAdd:
		return "FETCH_ADD"
	case WCBindMW:
		return "BIND_MW"
	case WCRecv:
		return "RECV"
	case WCRecvRDMAWithImm:
		return "RECV_RDMA_WITH_IMM"
	}
	return fmt.Sprintf("wc-opcode(%d)", int(o))
}

// WCFlags are the flags of a work completion (ibv_wc_flags).
type WCFlags uint8

const (
	// WCWithImm: Imm holds immediate data.
	WCWithImm WCFlags = 1 << 1
	// WCSolicited: the message had the solicited event bit (not in
	// ibv_wc_flags; set for receive completions).
	WCSolicited WCFlags = 1 << 7
)

// WC is a work completion (ibv_wc).
type WC struct {
	WRID    uint64
	Status  WCStatus
	Opcode  WCOpcode
	Flags   WCFlags
	ByteLen uint32
	Imm     uint32
	QPNum   uint32
	SrcQP   uint32
	// VendorErr carries the NAK syndrome or a cause code on errors.
	VendorErr uint32
}

func wcOpcodeOf(o WROpcode) WCOpcode {
	switch o {
	case WRSend, WRSendWithImm:
		return WCSend
	case WRRDMAWrite, WRRDMAWriteWithImm:
		return WCRDMAWrite
	case WRRDMARead:
		return WCRDMARead
	case WRAtomicCmpAndSwp:
		return WCCompSwap
	default:
		return WCFetchAdd
	}
}
