package verbs

import (
	"bytes"
	"net/netip"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/roce"
)

// BenchmarkGSOSendRefVsFlat compares two ways of sending one GSO datagram
// of 15 WRITE middle packets of 4096 bytes (one full datagram of a long
// transfer at MTU 4096) from a 1 MiB region on lo, as the engine could:
//
//   - ref: what emitPacket does for a stable payload: the batch holds
//     headers and trailers (ICRC computed over the payload where it
//     lies) and the message has 31 iovecs: the first header, then each
//     payload followed by its trailer and the next header;
//   - flat: the packets built whole in a staging buffer, each payload
//     copied in the pass that computes its ICRC (roce's fused copy), and
//     sent from that one buffer.
//
// The wire bytes are the same (the benchmark checks it once). The thread's
// CPU time spent building and sending is reported per MiB of payload
// (send-cpu-ns/MiB); the loopback delivers to the receiving socket in the
// sender's system call, so that time includes the kernel's receive path
// up to the socket queue, the same for both. The receiver drains its
// socket outside the timed part.
func BenchmarkGSOSendRefVsFlat(b *testing.B) {
	for _, mode := range []string{"ref", "flat"} {
		b.Run(mode, func(b *testing.B) { benchGSOSend(b, mode == "flat") })
	}
}

func benchGSOSend(b *testing.B, flat bool) {
	const (
		segs    = 15
		payload = 4096
	)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rx, rxAP := benchUDP(b)
	tx, txAP := benchUDP(b)
	if err := unix.SetsockoptInt(rx, unix.SOL_UDP, unix.UDP_GRO, 1); err != nil {
		b.Skipf("UDP_GRO: %v", err)
	}
	if err := unix.SetsockoptInt(rx, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20); err != nil {
		b.Fatal(err)
	}
	to := &unix.SockaddrInet4{Port: int(rxAP.Port()), Addr: rxAP.Addr().As4()}

	mr := make([]byte, 1<<20)
	for i := range mr {
		mr[i] = byte(i * 7)
	}
	p := roce.Packet{BTH: roce.BTH{Opcode: roce.OpWriteMiddle, PKey: 0xffff, DestQP: 0x11}}
	seg := p.HeaderLen() + payload + roce.ICRCLen
	oob := make([]byte, unix.CmsgSpace(2))
	putSegmentCmsg(oob, uint16(seg))

	var icrc roce.ICRCCache
	stage := make([]byte, 0, segs*seg)
	hdrs := make([]byte, 0, segs*(p.HeaderLen()+roce.ICRCLen))
	iov := make([][]byte, 0, 2*segs+1)
	off := 0
	// build fills stage (flat) or hdrs and iov (ref) with the next
	// datagram, its payloads taken in turn from mr.
	build := func(flat bool) [][]byte {
		if flat {
			stage = stage[:0]
		} else {
			hdrs, iov = hdrs[:0], iov[:0]
		}
		cut := 0
		for k := range segs {
			p.BTH.PSN = uint32(off / payload)
			p.Payload = mr[off : off+payload]
			off = (off + payload) % len(mr)
			if flat {
				stage = icrc.AppendIPID(stage, &p, txAP, rxAP, uint16(k))
				continue
			}
			at := len(hdrs)
			hdrs = roce.AppendHeader(hdrs, &p)
			iov = append(iov, hdrs[cut:], p.Payload)
			cut = len(hdrs)
			hdrs = icrc.AppendTrailerIPID(hdrs, hdrs[at:], p.Payload, txAP, rxAP, uint16(k))
		}
		if flat {
			return [][]byte{stage}
		}
		return append(iov, hdrs[cut:])
	}
	rbuf := make([]byte, 1<<16)
	send := func() {
		if _, err := unix.SendmsgBuffers(tx, build(flat), oob, to, 0); err != nil {
			b.Fatalf("sendmsg: %v", err)
		}
	}
	recv := func() []byte {
		for range 1000 {
			n, _, _, _, err := unix.Recvmsg(rx, rbuf, nil, 0)
			if err == nil {
				return rbuf[:n]
			}
			if err != unix.EINTR {
				b.Fatalf("recvmsg: %v", err)
			}
		}
		b.Fatal("recvmsg interrupted 1000 times")
		return nil
	}
	// The first datagram arrives as the bytes both ways build.
	off = 0
	send()
	got := recv()
	for _, f := range []bool{false, true} {
		off = 0
		var want []byte
		for _, v := range build(f) {
			want = append(want, v...)
		}
		if !bytes.Equal(got, want) {
			b.Fatalf("received %d bytes differ from the %d built (flat %v)", len(got), len(want), f)
		}
	}
	off = 0

	var cpu int64
	for b.Loop() {
		c0 := threadCPU(b)
		send()
		cpu += int64(threadCPU(b) - c0)
		recv()
	}
	b.SetBytes(segs * payload)
	b.ReportMetric(float64(cpu)/float64(b.N)*float64(1<<20)/float64(segs*payload), "send-cpu-ns/MiB")
}

// benchUDP opens a blocking UDP socket bound to 127.0.0.1 on a port the
// kernel picks, closed when b ends.
func benchUDP(b *testing.B) (int, netip.AddrPort) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		b.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		b.Fatal(err)
	}
	in := sa.(*unix.SockaddrInet4)
	return fd, netip.AddrPortFrom(netip.AddrFrom4(in.Addr), uint16(in.Port))
}
