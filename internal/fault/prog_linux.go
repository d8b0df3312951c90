package fault

import (
	"encoding/binary"
	"strconv"

	"github.com/cilium/ebpf/asm"
)

// Configuration map value, one entry at key 0. Fields holding packet
// bytes are stored as the CPU loads them from the packet (network byte
// order in memory), so the program compares without swapping.
const (
	cfgFlags     = 0  // u32, flag* bits
	cfgThreshold = 4  // u32, act when prandom < threshold
	cfgPort      = 8  // u32, UDP destination port as loaded (big-endian bytes)
	cfgQPN       = 12 // u32, 24-bit destination QP number, host order
	cfgWordOff   = 16 // u32, offset of the 16-bit word to corrupt, from the UDP header
	cfgXorMask   = 20 // u32, XOR applied to that word as loaded
	cfgSize      = 24
)

const (
	flagBlackHole = 1 << iota
	flagCorrupt
	flagPort
	flagQPN
	flagAlways
	flagAllIPv4
)

// Per-CPU counter indices.
const (
	ctrSeen = iota
	ctrDropped
	ctrCorrupted
	numCounters
)

// tc/tcx verdicts.
const (
	tcNext = -1 // TC_ACT_UNSPEC: next program, or pass
	tcShot = 2  // TC_ACT_SHOT: drop
)

const (
	ethHdrLen = 14
	udpHdrLen = 8
	bthQPNOff = 4 // BTH bytes 4..7: reserved byte, then DestQP (24 bits)

	bpfFMarkMangled0 = 1 << 5 // BPF_F_MARK_MANGLED_0
)

// Stack slots (offsets from R10).
const (
	stIP      = -64 // 20 bytes of IPv4 header
	stUDPOff  = -32 // u64, offset of the UDP header
	stUDP     = -24 // 8 bytes of UDP header
	stKey     = -16 // u32 map key
	stOldWord = -12 // u16 word before corruption
	stScratch = -8  // u32 / u16 scratch
)

// be16 is the value a native load of the big-endian bytes of v yields.
func be16(v uint16) int32 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return int32(binary.NativeEndian.Uint16(b[:]))
}

// builder appends instructions and puts pending labels on the next one.
type builder struct {
	insns  asm.Instructions
	labels []string
	n      int
}

func (b *builder) emit(ins ...asm.Instruction) {
	for _, in := range ins {
		// An instruction carries one symbol: extra labels become
		// jumps to the next label.
		for len(b.labels) > 1 {
			b.insns = append(b.insns, asm.Ja.Label(b.labels[1]).WithSymbol(b.labels[0]))
			b.labels = b.labels[1:]
		}
		if len(b.labels) == 1 {
			in = in.WithSymbol(b.labels[0])
			b.labels = nil
		}
		b.insns = append(b.insns, in)
	}
}

func (b *builder) label(l string) { b.labels = append(b.labels, l) }

func (b *builder) fresh() string {
	b.n++
	return "l" + strconv.Itoa(b.n)
}

// loadBytes emits bpf_skb_load_bytes(ctx, offReg, fp+st, n) and jumps to
// fail if it returns non-zero.
func (b *builder) loadBytes(off asm.Register, st int16, n int32, fail string) {
	b.emit(
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, off),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, int32(st)),
		asm.Mov.Imm(asm.R4, n),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, fail),
	)
}

// count emits counters[idx]++ on this CPU.
func (b *builder) count(ctrFD int, idx int32) {
	done := b.fresh()
	b.emit(
		asm.StoreImm(asm.RFP, stKey, int64(idx), asm.Word),
		asm.LoadMapPtr(asm.R1, ctrFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, done),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
	)
	b.label(done)
}

// program is a tc (tcx) classifier for Ethernet frames:
//
//	R6 ctx, R7 config, R8 flags, R9 UDP header offset
//	if not IPv4: pass
//	if all IPv4: seen++, dropped++, drop
//	if not UDP (first fragment), or port/QPN filters miss: pass
//	seen++
//	if black hole, or always, or prandom < threshold:
//	    corrupt ? flip the configured word, fix the UDP checksum, corrupted++, pass
//	            : dropped++, drop
func program(cfgFD, ctrFD int) asm.Instructions {
	var b builder
	const pass = "pass"
	b.emit(
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.StoreImm(asm.RFP, stKey, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, cfgFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, pass),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.LoadMem(asm.R8, asm.R7, cfgFlags, asm.Word),
		// skb->protocol (offset 16) must be ETH_P_IP.
		asm.LoadMem(asm.R1, asm.R6, 16, asm.Word),
		asm.JNE.Imm(asm.R1, be16(0x0800), pass),
		asm.Mov.Imm(asm.R9, ethHdrLen),
	)
	// Every IPv4 packet, whatever its protocol: a path that carries
	// nothing at all.
	onlyUDP := b.fresh()
	b.emit(
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.And.Imm(asm.R1, flagAllIPv4),
		asm.JEq.Imm(asm.R1, 0, onlyUDP),
	)
	b.count(ctrFD, ctrSeen)
	b.count(ctrFD, ctrDropped)
	b.emit(
		asm.Mov.Imm(asm.R0, tcShot),
		asm.Return(),
	)
	b.label(onlyUDP)
	b.loadBytes(asm.R9, stIP, 20, pass)
	b.emit(
		asm.LoadMem(asm.R1, asm.RFP, stIP, asm.Byte),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.RSh.Imm(asm.R2, 4),
		asm.JNE.Imm(asm.R2, 4, pass),
		asm.And.Imm(asm.R1, 0x0f),
		asm.LSh.Imm(asm.R1, 2),
		asm.JLT.Imm(asm.R1, 20, pass),
		asm.LoadMem(asm.R2, asm.RFP, stIP+9, asm.Byte),
		asm.JNE.Imm(asm.R2, 17, pass), // IPPROTO_UDP
		asm.LoadMem(asm.R2, asm.RFP, stIP+6, asm.Half),
		asm.And.Imm(asm.R2, be16(0x1fff)), // fragment offset
		asm.JNE.Imm(asm.R2, 0, pass),
		asm.Add.Reg(asm.R9, asm.R1),
		asm.StoreMem(asm.RFP, stUDPOff, asm.R9, asm.DWord),
	)
	b.loadBytes(asm.R9, stUDP, udpHdrLen, pass)

	// Destination port filter.
	noPort := b.fresh()
	b.emit(
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.And.Imm(asm.R1, flagPort),
		asm.JEq.Imm(asm.R1, 0, noPort),
		asm.LoadMem(asm.R1, asm.RFP, stUDP+2, asm.Half),
		asm.LoadMem(asm.R2, asm.R7, cfgPort, asm.Word),
		asm.JNE.Reg(asm.R1, asm.R2, pass),
	)
	b.label(noPort)

	// Destination QP filter: BTH DestQP, UDP payload bytes 5..7.
	noQPN := b.fresh()
	b.emit(
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.And.Imm(asm.R1, flagQPN),
		asm.JEq.Imm(asm.R1, 0, noQPN),
		asm.Mov.Reg(asm.R5, asm.R9),
		asm.Add.Imm(asm.R5, udpHdrLen+bthQPNOff),
	)
	b.loadBytes(asm.R5, stScratch, 4, pass)
	b.emit(
		asm.LoadMem(asm.R1, asm.RFP, stScratch, asm.Word),
		asm.HostTo(asm.BE, asm.R1, asm.Word),
		asm.And.Imm(asm.R1, 0xffffff),
		asm.LoadMem(asm.R2, asm.R7, cfgQPN, asm.Word),
		asm.JNE.Reg(asm.R1, asm.R2, pass),
	)
	b.label(noQPN)

	b.count(ctrFD, ctrSeen)
	b.emit(
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.And.Imm(asm.R1, flagBlackHole|flagAlways),
		asm.JNE.Imm(asm.R1, 0, "act"),
		asm.FnGetPrandomU32.Call(),
		asm.LoadMem(asm.R1, asm.R7, cfgThreshold, asm.Word),
		asm.JGE.Reg(asm.R0, asm.R1, pass),
	)
	b.label("act")
	b.emit(
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.And.Imm(asm.R1, flagCorrupt),
		asm.JNE.Imm(asm.R1, 0, "corrupt"),
	)
	b.count(ctrFD, ctrDropped)
	b.emit(
		asm.Mov.Imm(asm.R0, tcShot),
		asm.Return(),
	)

	b.label("corrupt")
	b.emit(
		asm.LoadMem(asm.R1, asm.R7, cfgWordOff, asm.Word),
		asm.Add.Reg(asm.R9, asm.R1),
	)
	b.loadBytes(asm.R9, stScratch, 2, pass)
	b.emit(
		asm.LoadMem(asm.R1, asm.R7, cfgXorMask, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, stScratch, asm.Half),
		asm.StoreMem(asm.RFP, stOldWord, asm.R2, asm.Half),
		asm.Xor.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.RFP, stScratch, asm.R2, asm.Half),
		// bpf_skb_store_bytes(ctx, off, &new, 2, 0)
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R9),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, stScratch),
		asm.Mov.Imm(asm.R4, 2),
		asm.Mov.Imm(asm.R5, 0),
		asm.FnSkbStoreBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, pass),
		// bpf_l4_csum_replace(ctx, udp+6, old, new, 2|BPF_F_MARK_MANGLED_0)
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.LoadMem(asm.R2, asm.RFP, stUDPOff, asm.DWord),
		asm.Add.Imm(asm.R2, 6),
		asm.LoadMem(asm.R3, asm.RFP, stOldWord, asm.Half),
		asm.LoadMem(asm.R4, asm.RFP, stScratch, asm.Half),
		asm.Mov.Imm(asm.R5, 2|bpfFMarkMangled0),
		asm.FnL4CsumReplace.Call(),
	)
	b.count(ctrFD, ctrCorrupted)
	b.label(pass)
	b.emit(
		asm.Mov.Imm(asm.R0, tcNext),
		asm.Return(),
	)
	return b.insns
}
