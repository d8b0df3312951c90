package roce

import (
	"strconv"
	"testing"
)

var benchSizes = []int{8, 4096}

func BenchmarkAppend(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			p := samplePacket(OpWriteOnly, n)
			buf := make([]byte, 0, p.WireLen())
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				buf = Append(buf[:0], &p, hostAP, vmAP)
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			p := samplePacket(OpWriteOnly, n)
			wire := Append(nil, &p, hostAP, vmAP)
			var q Packet
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if err := Decode(wire, &q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCheckICRC(b *testing.B) {
	for _, n := range benchSizes {
		for _, id := range []uint16{0, 0x1234} {
			b.Run(strconv.Itoa(n)+"/ipid="+strconv.Itoa(int(id)), func(b *testing.B) {
				p := samplePacket(OpWriteOnly, n)
				wire := Append(nil, &p, vmAP, hostAP)
				if id != 0 {
					c := refICRC(wire, vmAP, hostAP, id, true)
					wire[len(wire)-4], wire[len(wire)-3], wire[len(wire)-2], wire[len(wire)-1] =
						byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
				}
				if err := CheckICRC(wire, vmAP, hostAP); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					if err := CheckICRC(wire, vmAP, hostAP); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkAppendHeaderTrailer is the copy-free send path: headers and
// trailer built separately, the payload only read for the ICRC.
func BenchmarkAppendHeaderTrailer(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			p := samplePacket(OpWriteOnly, n)
			hdr := make([]byte, 0, MaxHeaderLen)
			tr := make([]byte, 0, 8)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				hdr = AppendHeader(hdr[:0], &p)
				tr = AppendTrailer(tr[:0], hdr, p.Payload, hostAP, vmAP)
			}
		})
	}
}
