package roce

import (
	"errors"
	"net/netip"
	"testing"
)

func FuzzDecode(f *testing.F) {
	for _, o := range allOpcodes() {
		p := samplePacket(o, int(o)%7)
		f.Add(Append(nil, &p, hostAP, vmAP))
	}
	f.Add([]byte{})
	f.Add(make([]byte, 16))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Packet
		if err := Decode(b, &p); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode error %v does not match ErrMalformed", err)
			}
			return
		}
		if !p.BTH.Opcode.Valid() || p.BTH.TVer != 0 {
			t.Fatalf("Decode accepted %+v", p.BTH)
		}
		re := Append(nil, &p, hostAP, vmAP)
		if len(re) != len(b) {
			t.Fatalf("re-encoded %d bytes from %d", len(re), len(b))
		}
		var q Packet
		if err := Decode(re, &q); err != nil {
			t.Fatalf("re-encoded packet does not decode: %v", err)
		}
		if !packetsEqual(&p, &q) {
			t.Fatalf("round trip changed the packet:\n%+v\n%+v", p, q)
		}
		if err := CheckICRC(re, hostAP, vmAP); err != nil {
			t.Fatalf("re-encoded packet: %v", err)
		}
	})
}

func FuzzCheckICRC(f *testing.F) {
	for _, o := range allOpcodes() {
		p := samplePacket(o, int(o)*3)
		f.Add(Append(nil, &p, hostAP, vmAP), false, uint16(0))
		f.Add(Append(nil, &p, host6AP, vm6AP), true, uint16(0))
	}
	f.Add([]byte{1, 2, 3}, false, uint16(7))
	f.Fuzz(func(t *testing.T, b []byte, v6 bool, sport uint16) {
		src, dst := netip.AddrPortFrom(hostAP.Addr(), sport), vmAP
		if v6 {
			src, dst = netip.AddrPortFrom(host6AP.Addr(), sport), vm6AP
		}
		err := CheckICRC(b, src, dst)
		if err != nil && !errors.Is(err, ErrBadICRC) {
			t.Fatalf("CheckICRC error %v does not match ErrBadICRC", err)
		}
		if len(b) < BTHLen+ICRCLen {
			if err == nil {
				t.Fatalf("%d bytes accepted", len(b))
			}
			return
		}
		// Whatever came in, the ICRC ICRC computes must be accepted.
		c := ICRC(b, src, dst)
		fixed := append([]byte(nil), b...)
		n := len(fixed)
		fixed[n-4], fixed[n-3], fixed[n-2], fixed[n-1] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
		if err := CheckICRC(fixed, src, dst); err != nil {
			t.Fatalf("own ICRC rejected: %v", err)
		}
		if c != refICRC(fixed, src, dst, 0, true) {
			t.Fatalf("ICRC differs from the reference formula")
		}
	})
}
