package roce

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
)

// copyCheck runs a CopyCheck (guessing IP ID guess) over the payload of
// wire in pieces of at most piece bytes into out and returns Check's
// error.
func copyCheck(t testing.TB, wire []byte, hdrLen, payLen, piece int, out []byte, src, dst netip.AddrPort, guess uint16) error {
	t.Helper()
	var k CopyCheck
	if err := k.Start(wire, hdrLen, src, dst, guess); err != nil {
		return err
	}
	for off := 0; off < payLen; off += piece {
		k.Copy(out[off:min(off+piece, payLen)])
	}
	return k.Check()
}

// TestCopyCheck: over packets of every length class, IPv4 and IPv6,
// with the IP ID a GSO segment carries, guessed right or wrong, and
// copied in pieces of several sizes, CopyCheck copies the payload
// exactly and agrees with CheckICRC: it accepts the good packet and
// rejects every single-bit corruption of headers, payload and ICRC field
// alike.
func TestCopyCheck(t *testing.T) {
	type addrs struct{ src, dst netip.AddrPort }
	for _, a := range []addrs{{hostAP, vmAP}, {host6AP, vm6AP}} {
		for _, n := range []int{0, 1, 3, 127, 128, 511, 512, 513, 1024, 4093, 4096} {
			for _, id := range []uint16{0, 0x1234} {
				p := samplePacket(OpWriteMiddle, n)
				for i := range p.Payload {
					p.Payload[i] = byte(i*13 + n)
				}
				wire := Append(nil, &p, a.src, a.dst)
				if id != 0 && a.src.Addr().Is4() {
					c := refICRC(wire, a.src, a.dst, id, true)
					binary.LittleEndian.PutUint32(wire[len(wire)-ICRCLen:], c)
				}
				h := p.HeaderLen()
				for _, guess := range []uint16{0, id, 7} {
					for _, piece := range []int{1, 100, 512, 4096} {
						out := make([]byte, n)
						if err := copyCheck(t, wire, h, n, max(piece, 1), out, a.src, a.dst, guess); err != nil {
							t.Fatalf("%v, %d bytes, IP ID %#x guessed %#x, pieces of %d: good packet rejected: %v", a.src, n, id, guess, piece, err)
						}
						if !bytes.Equal(out, p.Payload) {
							t.Fatalf("%v, %d bytes, pieces of %d: payload copied wrong", a.src, n, piece)
						}
					}
					for bit := 0; bit < len(wire)*8; bit += 1 + len(wire)/64 {
						bad := append([]byte(nil), wire...)
						bad[bit/8] ^= 1 << (bit % 8)
						want := CheckICRC(bad, a.src, a.dst)
						got := copyCheck(t, bad, h, n, 512, make([]byte, n), a.src, a.dst, guess)
						if (got == nil) != (want == nil) {
							t.Fatalf("%v, %d bytes, guess %#x, bit %d flipped: CopyCheck %v, CheckICRC %v", a.src, n, guess, bit, got, want)
						}
						if got != nil && !errors.Is(got, ErrBadICRC) {
							t.Fatalf("error %v does not match ErrBadICRC", got)
						}
						if got2 := CheckICRCID(bad, a.src, a.dst, guess); (got2 == nil) != (want == nil) {
							t.Fatalf("%v, %d bytes, guess %#x, bit %d flipped: CheckICRCID %v, CheckICRC %v", a.src, n, guess, bit, got2, want)
						}
					}
				}
			}
		}
	}
}

// TestCopyCheckBounds: lengths Start refuses and a Copy into the ICRC
// field.
func TestCopyCheckBounds(t *testing.T) {
	var k CopyCheck
	for _, c := range []struct {
		n, hdr int
	}{{BTHLen + ICRCLen - 1, BTHLen}, {64, BTHLen - 1}, {64, 61}} {
		if err := k.Start(make([]byte, c.n), c.hdr, hostAP, vmAP, 0); !errors.Is(err, ErrBadICRC) || !errors.Is(err, ErrMalformed) {
			t.Errorf("Start of %d bytes with %d header bytes: %v, want ErrBadICRC and ErrMalformed", c.n, c.hdr, err)
		}
	}
	if err := k.Start(make([]byte, 64), BTHLen, hostAP, vm6AP, 0); !errors.Is(err, ErrBadICRC) {
		t.Errorf("mixed families: %v, want ErrBadICRC", err)
	}
	if err := k.Start(make([]byte, 64), BTHLen, hostAP, vmAP, 0); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Copy into the ICRC field did not panic")
		}
	}()
	k.Copy(make([]byte, 64-BTHLen-ICRCLen+1))
}

// FuzzCopyCheck: for any input, CopyCheck accepts exactly what
// CheckICRC accepts and copies the bytes it was asked to.
func FuzzCopyCheck(f *testing.F) {
	for _, o := range []Opcode{OpWriteMiddle, OpReadResponseMiddle, OpSendMiddle, OpWriteLast} {
		p := samplePacket(o, 700)
		f.Add(Append(nil, &p, hostAP, vmAP), uint16(p.HeaderLen()), uint16(300), false, uint16(0))
		f.Add(AppendIPID(nil, &p, hostAP, vmAP, 3), uint16(p.HeaderLen()), uint16(300), false, uint16(3))
		f.Add(Append(nil, &p, host6AP, vm6AP), uint16(p.HeaderLen()), uint16(700), true, uint16(0))
	}
	f.Add([]byte{1, 2, 3}, uint16(12), uint16(0), false, uint16(1))
	f.Fuzz(func(t *testing.T, b []byte, hdr, piece uint16, v6 bool, guess uint16) {
		src, dst := hostAP, vmAP
		if v6 {
			src, dst = host6AP, vm6AP
		}
		var k CopyCheck
		h := int(hdr)
		if err := k.Start(b, h, src, dst, guess); err != nil {
			if !errors.Is(err, ErrBadICRC) {
				t.Fatalf("Start error %v does not match ErrBadICRC", err)
			}
			if h >= BTHLen && h <= len(b)-ICRCLen && CheckICRC(b, src, dst) == nil {
				t.Fatalf("Start refused what CheckICRC accepts: %v", err)
			}
			return
		}
		m := len(b) - ICRCLen - h
		out := make([]byte, m)
		step := max(int(piece), 1)
		for off := 0; off < m; off += step {
			k.Copy(out[off:min(off+step, m)])
		}
		if !bytes.Equal(out, b[h:h+m]) {
			t.Fatal("copy differs")
		}
		if got, want := k.Check(), CheckICRC(b, src, dst); (got == nil) != (want == nil) {
			t.Fatalf("CopyCheck %v, CheckICRC %v", got, want)
		}
	})
}
