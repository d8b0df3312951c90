package oobexch

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

// Captured on the rxe-vm tap: the VM's ibv_rc_pingpong server answer.
var capturedVMDest = []byte("0000:000011:5918b6:00000000000000000000ffff0a4d0002\x00")

func TestParseDestCaptured(t *testing.T) {
	d, err := ParseDest(capturedVMDest)
	if err != nil {
		t.Fatal(err)
	}
	want := Dest{QPN: 0x11, PSN: 0x5918b6, GID: GIDFromAddr(netip.MustParseAddr("10.77.0.2"))}
	if d != want {
		t.Fatalf("got %v, want %v", d, want)
	}
	if d.Addr() != netip.MustParseAddr("10.77.0.2") {
		t.Fatalf("Addr() = %v", d.Addr())
	}
	b, err := d.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, capturedVMDest) {
		t.Fatalf("re-encoded %q, want %q", b, capturedVMDest)
	}
}

func TestDestRejects(t *testing.T) {
	for _, tc := range []string{
		"",
		"0000:000011:5918b6:00000000000000000000ffff0a4d0002",         // no NUL: 51 bytes
		"0000:000011:5918b6:00000000000000000000ffff0a4d0002\x00\x00", // 53 bytes
		"0000:000011:5918b6:00000000000000000000ffff0a4d000g\x00",     // bad hex
		"0000:000011:5918b6:0000000000000000000:ffff0a4d0002\x00",     // extra colon
		"0000:000011:5918b6\x0000000000000000000000ffff0a4d0002\x00",  // early NUL
		"10000:00011:5918b6:00000000000000000000ffff0a4d0002\x00",     // LID > 16 bits
		"0000:1000011:918b6:00000000000000000000ffff0a4d0002\x00",     // QPN > 24 bits
	} {
		if _, err := ParseDest([]byte(tc)); !errors.Is(err, ErrFormat) {
			t.Errorf("ParseDest(%q) = %v, want ErrFormat", tc, err)
		}
	}
	if _, err := (Dest{QPN: 1 << 24}).MarshalBinary(); !errors.Is(err, ErrFormat) {
		t.Errorf("marshal of 25-bit QPN: %v", err)
	}
}

func TestDone(t *testing.T) {
	if !IsDone([]byte("done\x00")) || IsDone([]byte("done")) || IsDone(capturedVMDest) {
		t.Fatal("IsDone misclassifies")
	}
}

func TestPerftestKeyRoundTrip(t *testing.T) {
	k := PerftestKey{LID: 0, OutReads: 16, QPN: 0x11, PSN: 0xabcdef, RKey: 0x1234, VAddr: 0x55d0c0ffee000,
		GID: GIDFromAddr(netip.MustParseAddr("10.77.0.1")), SRQN: 0}
	b, err := k.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != PerftestKeySize {
		t.Fatalf("len %d, want %d", len(b), PerftestKeySize)
	}
	want := "0000:0010:000011:abcdef:00001234:00055d0c0ffee000:00:00:00:00:00:00:00:00:00:00:ff:ff:0a:4d:00:01:00000000:\x00"
	if string(b) != want {
		t.Fatalf("got %q\nwant %q", b, want)
	}
	got, err := ParsePerftestKey(b)
	if err != nil {
		t.Fatal(err)
	}
	if got != k {
		t.Fatalf("round trip: %v != %v", got, k)
	}
	b[10] = 'x'
	if _, err := ParsePerftestKey(b); !errors.Is(err, ErrFormat) {
		t.Fatalf("bad hex accepted: %v", err)
	}
	if _, err := ParsePerftestKey(b[:107]); !errors.Is(err, ErrFormat) {
		t.Fatalf("short message accepted: %v", err)
	}
}

func FuzzParseDest(f *testing.F) {
	f.Add(capturedVMDest)
	f.Add([]byte("0000:000011:123456:00000000000000000000ffff0a4d0001\x00"))
	f.Add([]byte("done\x00"))
	f.Add(make([]byte, DestSize))
	f.Fuzz(func(t *testing.T, msg []byte) {
		d, err := ParseDest(msg)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		b, err := d.MarshalBinary()
		if err != nil {
			t.Fatalf("parsed %v but cannot re-encode: %v", d, err)
		}
		d2, err := ParseDest(b)
		if err != nil || d2 != d {
			t.Fatalf("re-encoded %q parses to %v, %v; want %v", b, d2, err, d)
		}
	})
}

func FuzzParsePerftestKey(f *testing.F) {
	k, _ := PerftestKey{OutReads: 16, QPN: 0x11, PSN: 1, RKey: 2, VAddr: 3}.MarshalBinary()
	f.Add(k)
	f.Add(make([]byte, PerftestKeySize))
	f.Fuzz(func(t *testing.T, msg []byte) {
		k, err := ParsePerftestKey(msg)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		b, err := k.MarshalBinary()
		if err != nil {
			t.Fatalf("parsed %v but cannot re-encode: %v", k, err)
		}
		k2, err := ParsePerftestKey(b)
		if err != nil || k2 != k {
			t.Fatalf("re-encoded %q parses to %v, %v; want %v", b, k2, err, k)
		}
	})
}
