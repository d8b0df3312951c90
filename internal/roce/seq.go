package roce

import (
	"strconv"
	"time"
)

// PSNMask masks a 24-bit packet (or message) sequence number.
const PSNMask = 1<<24 - 1

// PSNAdd returns psn+n modulo 2^24 (n may be negative).
func PSNAdd(psn uint32, n int) uint32 {
	return uint32(int64(psn)+int64(n)) & PSNMask
}

// PSNDiff returns the signed distance a-b of two 24-bit PSNs, in
// [-2^23, 2^23): positive if a is after b in the sequence.
func PSNDiff(a, b uint32) int32 {
	return int32((a-b)<<8) >> 8
}

// rnrTimes are the RNR NAK timer values in ns (IBTA table 46).
var rnrTimes = [32]time.Duration{
	655360 * time.Microsecond,
	10 * time.Microsecond, 20 * time.Microsecond, 30 * time.Microsecond, 40 * time.Microsecond,
	60 * time.Microsecond, 80 * time.Microsecond, 120 * time.Microsecond, 160 * time.Microsecond,
	240 * time.Microsecond, 320 * time.Microsecond, 480 * time.Microsecond, 640 * time.Microsecond,
	960 * time.Microsecond, 1280 * time.Microsecond, 1920 * time.Microsecond, 2560 * time.Microsecond,
	3840 * time.Microsecond, 5120 * time.Microsecond, 7680 * time.Microsecond, 10240 * time.Microsecond,
	15360 * time.Microsecond, 20480 * time.Microsecond, 30720 * time.Microsecond, 40960 * time.Microsecond,
	61440 * time.Microsecond, 81920 * time.Microsecond, 122880 * time.Microsecond, 163840 * time.Microsecond,
	245760 * time.Microsecond, 327680 * time.Microsecond, 491520 * time.Microsecond,
}

// RNRTimer returns the minimum RNR NAK delay of a 5-bit timer code
// (IBTA table 46: 0 = 655.36 ms, 1 = 0.01 ms, ... 12 = 0.64 ms, ...
// 31 = 491.52 ms). Only the low 5 bits of code are used.
func RNRTimer(code uint8) time.Duration { return rnrTimes[code&0x1f] }

// LocalAckTimeout returns the local ACK timeout of a 5-bit QP timeout
// attribute: 4.096 µs * 2^t. t == 0 means infinite and returns 0. Only
// the low 5 bits of t are used.
func LocalAckTimeout(t uint8) time.Duration {
	t &= 0x1f
	if t == 0 {
		return 0
	}
	return 4096 * time.Nanosecond << t
}

// MTU is the IB path MTU enumeration (as in ibverbs' enum ibv_mtu).
type MTU uint8

// Path MTU values.
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Bytes returns the MTU in bytes (the maximum payload of one packet), or
// 0 if m is not a valid enumeration value.
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

// Valid reports whether m is one of MTU256 ... MTU4096.
func (m MTU) Valid() bool { return m.Bytes() != 0 }

func (m MTU) String() string {
	if b := m.Bytes(); b != 0 {
		return strconv.Itoa(b)
	}
	return "MTU(" + strconv.Itoa(int(m)) + ")"
}

// MTUOf returns the MTU enumeration value for exactly n bytes (256, 512,
// 1024, 2048 or 4096); ok is false for any other n.
func MTUOf(n int) (m MTU, ok bool) {
	for m := MTU256; m <= MTU4096; m++ {
		if m.Bytes() == n {
			return m, true
		}
	}
	return 0, false
}

// MTUFloor returns the largest MTU whose Bytes() is at most n, or 0 if
// n < 256. Use it to derive the path MTU from the payload room of a
// link (as rxe does: the netdev MTU minus IP, UDP, BTH, extension
// headers and ICRC).
func MTUFloor(n int) MTU {
	m := MTU(0)
	for c := MTU256; c <= MTU4096 && c.Bytes() <= n; c++ {
		m = c
	}
	return m
}

// Overhead returns the bytes a packet adds on the IP layer to its payload
// in the worst case for supported opcodes: IP header (20 or 40 bytes), UDP
// header, the longest RC header with payload (BTH+RETH+Imm) and the ICRC.
// MTUFloor(linkMTU-Overhead(ipv6)) is the largest usable path MTU.
func Overhead(ipv6 bool) int {
	ip := 20
	if ipv6 {
		ip = 40
	}
	return ip + 8 + BTHLen + RETHLen + ImmLen + ICRCLen
}

// SourcePort returns the UDP source port Linux RoCE drivers (rxe, and
// the kernel's rdma_get_udp_sport) use for a QP: derived from the GRH
// flow label, or if that is 0 from the local and remote QP numbers, and
// folded into 0xc000..0xffff. Keeping it fixed per QP keeps a
// connection on one ECMP path. (The ICRC covers the source port, so a
// receiver must use the port the datagram came from, whatever it is.)
func SourcePort(flowLabel, localQPN, remoteQPN uint32) uint16 {
	fl := flowLabel & 0xfffff
	if fl == 0 {
		v := uint64(localQPN) * uint64(remoteQPN)
		v ^= v >> 20
		v ^= v >> 40
		fl = uint32(v) & 0xfffff
	}
	low := fl&0x3fff ^ fl>>14
	return uint16(low) | 0xc000
}
