package rc

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

func sampleAddr() Address {
	return Address{IP: netip.MustParseAddr("10.7.0.1"), UDPPort: 4791, CMPort: 40000, Nonce: 0x0123456789abcdef}
}

func TestAddressRoundTrip(t *testing.T) {
	a := sampleAddr()
	b := a.Pack()
	if len(b) != addrLen {
		t.Fatalf("packed %d bytes, want %d", len(b), addrLen)
	}
	got, err := DecodeAddress(b)
	if err != nil {
		t.Fatal(err)
	}
	if got != a {
		t.Fatalf("decoded %v, want %v", got, a)
	}
	for i := range b {
		c := bytes.Clone(b)
		c[i] ^= 0xff
		if d, err := DecodeAddress(c); err == nil && d == a {
			t.Errorf("flipping byte %d decoded to the same address", i)
		} else if err != nil && !errors.Is(err, uct.ErrInvalidAddress) {
			t.Errorf("flipping byte %d: %v does not wrap ErrInvalidAddress", i, err)
		}
	}
	for _, bad := range [][]byte{nil, {addrVersion}, b[:addrLen-1], append(bytes.Clone(b), 0)} {
		if _, err := DecodeAddress(bad); !errors.Is(err, uct.ErrInvalidAddress) {
			t.Errorf("DecodeAddress(%x) = %v, want ErrInvalidAddress", bad, err)
		}
	}
}

// TestAddressUDPPort: the UDP port travels in bytes 2-3, big-endian, so a
// device that could not share 4791 is reached on the port it bound.
func TestAddressUDPPort(t *testing.T) {
	for _, port := range []uint16{4791, 1, 33000, 60999, 65535} {
		a := sampleAddr()
		a.UDPPort = port
		b := a.Pack()
		if got := uint16(b[2])<<8 | uint16(b[3]); got != port {
			t.Errorf("port %d packed as %02x%02x", port, b[2], b[3])
		}
		d, err := DecodeAddress(b)
		if err != nil || d != a {
			t.Errorf("port %d: decoded %v, %v", port, d, err)
		}
	}
	a := sampleAddr()
	a.UDPPort = 0
	if _, err := DecodeAddress(a.Pack()); !errors.Is(err, uct.ErrInvalidAddress) {
		t.Errorf("UDP port 0: %v, want ErrInvalidAddress", err)
	}
}

func FuzzDecodeAddress(f *testing.F) {
	f.Add(sampleAddr().Pack())
	fallback := sampleAddr()
	fallback.UDPPort = 45017
	f.Add(fallback.Pack())
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xee}, addrLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAddress(b)
		if err != nil {
			if !errors.Is(err, uct.ErrInvalidAddress) {
				t.Fatalf("error %v does not wrap ErrInvalidAddress", err)
			}
			return
		}
		if !bytes.Equal(a.Pack(), b) {
			t.Fatalf("%x decodes to %v, which packs to %x", b, a, a.Pack())
		}
	})
}

func TestRKeyRoundTrip(t *testing.T) {
	b := packRKey(0xdeadbeef, 42)
	k, id, err := unpackRKey(b)
	if err != nil || k != 0xdeadbeef || id != 42 {
		t.Fatalf("unpack = %#x, %d, %v", k, id, err)
	}
	for _, bad := range [][]byte{nil, {rkeyVersion}, b[:rkeyLen-1], packRKey(1, 0), append([]byte{9}, b[1:]...)} {
		if _, _, err := unpackRKey(bad); !errors.Is(err, uct.ErrInvalidParam) {
			t.Errorf("unpackRKey(%x) = %v, want ErrInvalidParam", bad, err)
		}
	}
}

func FuzzUnpackRKey(f *testing.F) {
	f.Add(packRKey(0x1234, 7))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, id, err := unpackRKey(b)
		if err != nil {
			if !errors.Is(err, uct.ErrInvalidParam) {
				t.Fatalf("error %v does not wrap ErrInvalidParam", err)
			}
			return
		}
		if !bytes.Equal(packRKey(k, id), b) {
			t.Fatalf("%x round-trips to %x", b, packRKey(k, id))
		}
	})
}

func sampleCM() []cmMsg {
	return []cmMsg{
		{Type: cmREQ, GID: netip.MustParseAddr("10.7.0.1"), UDPPort: 4791, QPN: 0x11, PSN: 0xabcdef, MTU: 1024, Nonce: 1, DstNonce: 2, Window: 128, AckTimeout: 15},
		{Type: cmREP, QPN: 0xffffff, PSN: 0, MTU: 4096, Nonce: 3, Window: 64},
		{Type: cmREJ, Reason: rejStaleNonce},
		{Type: cmDREQ, QPN: 0x12},
		{Type: cmDOWN, QPN: 0x13},
	}
}

func TestCMRoundTrip(t *testing.T) {
	for _, m := range sampleCM() {
		b := m.encode()
		got, err := decodeCM(b)
		if err != nil {
			t.Fatalf("type %d: %v", m.Type, err)
		}
		if got != m {
			t.Errorf("type %d: decoded %+v, want %+v", m.Type, got, m)
		}
		r, err := readCM(bytes.NewReader(b))
		if err != nil || r != m {
			t.Errorf("type %d: readCM = %+v, %v", m.Type, r, err)
		}
		if _, err := decodeCM(b[:len(b)-1]); !errors.Is(err, uct.ErrInvalidParam) {
			t.Errorf("type %d truncated: %v, want ErrInvalidParam", m.Type, err)
		}
		if _, err := readCM(bytes.NewReader(b[:len(b)-1])); err == nil {
			t.Errorf("type %d: readCM of a truncated frame succeeded", m.Type)
		}
	}
	bad := sampleCM()[0]
	bad.MTU = 1000
	if _, err := decodeCM(bad.encode()); !errors.Is(err, uct.ErrInvalidParam) {
		t.Errorf("REQ with MTU 1000: %v, want ErrInvalidParam", err)
	}
	for _, to := range []uint8{0, 32} {
		bad = sampleCM()[0]
		bad.AckTimeout = to
		if _, err := decodeCM(bad.encode()); !errors.Is(err, uct.ErrInvalidParam) {
			t.Errorf("REQ with local ACK timeout %d: %v, want ErrInvalidParam", to, err)
		}
	}
	bad = sampleCM()[1]
	bad.QPN = 1 << 24
	if _, err := decodeCM(bad.encode()); !errors.Is(err, uct.ErrInvalidParam) {
		t.Errorf("REP with QPN 2^24: %v, want ErrInvalidParam", err)
	}
}

func FuzzDecodeCM(f *testing.F) {
	for _, m := range sampleCM() {
		f.Add(m.encode())
	}
	f.Add([]byte{})
	f.Add([]byte("RCCM\x01\x09\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeCM(b)
		if err != nil {
			if !errors.Is(err, uct.ErrInvalidParam) {
				t.Fatalf("error %v does not wrap ErrInvalidParam", err)
			}
			return
		}
		if !bytes.Equal(m.encode(), b) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, m, m.encode())
		}
		r, err := readCM(bytes.NewReader(b))
		if err != nil || r != m {
			t.Fatalf("readCM(%x) = %+v, %v; decodeCM gave %+v", b, r, err, m)
		}
	})
}

func TestAMFraming(t *testing.T) {
	for id := uint8(0); id <= uct.MaxAMID; id++ {
		b := []byte{id, 'x', 'y'}
		got, msg, ok := decodeAM(b)
		if !ok || got != id || string(msg) != "xy" {
			t.Errorf("AM id %d: %x decodes as id %d, message %q, ok %v", id, b, got, msg, ok)
		}
	}
	for _, b := range [][]byte{nil, {uct.MaxAMID + 1}, {0xff, 1, 2}} {
		if id, msg, ok := decodeAM(b); ok {
			t.Errorf("%x decodes as AM id %d with %d bytes, want it refused", b, id, len(msg))
		}
	}
	g := immGrantOf(64)
	if !immIsGrant(g) || immCredits(g) != 64 {
		t.Errorf("grant 64: imm %#x decodes as grant=%v credits=%d", g, immIsGrant(g), immCredits(g))
	}
}

func FuzzDecodeAM(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3})
	f.Add([]byte{uct.MaxAMID, 1, 2, 3})
	f.Add([]byte{uct.MaxAMID + 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, msg, ok := decodeAM(b)
		if !ok {
			if len(b) >= amHdrLen && b[0] <= uct.MaxAMID {
				t.Fatalf("%x refused", b)
			}
			return
		}
		if id > uct.MaxAMID || len(msg) != len(b)-amHdrLen || !bytes.Equal(append([]byte{id}, msg...), b) {
			t.Fatalf("%x decodes to id %d, message %x", b, id, msg)
		}
	})
}
