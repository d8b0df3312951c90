package ucp

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

func FuzzUnpackAddress(f *testing.F) {
	f.Add(Address{UUID: 7, Host: "h/b", Ifaces: []IfaceAddress{{"shm", []byte{1, 2, 3}}}}.Pack())
	f.Add(Address{UUID: 1, Ifaces: []IfaceAddress{{"shm", []byte{1}}, {"rc", make([]byte, 40)}}}.Pack())
	f.Add([]byte{})
	f.Add([]byte("UCGW\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := UnpackAddress(b)
		if err != nil {
			if !errors.Is(err, uct.ErrInvalidAddress) {
				t.Fatalf("error %v does not wrap ErrInvalidAddress", err)
			}
			return
		}
		if !bytes.Equal(a.Pack(), b) {
			t.Fatalf("round trip differs")
		}
	})
}

func FuzzWire(f *testing.F) {
	f.Add(uint8(amWireup), (&wireup{kind: wireupReq, src: 3, addr: []byte("x")}).encode())
	var h [eagerHdr]byte
	putEagerHdr(h[:], 5, 6)
	f.Add(uint8(amEager), append(h[:], 1, 2, 3))
	f.Add(uint8(amRTS), (&rts{tag: 1, dst: 2, sreq: 3, length: 4, raddr: 5, rkey: []byte{1, 2}}).encode(nil))
	f.Add(uint8(amATS), (&ack{dst: 1, req: 2, status: 3}).encode(nil))
	f.Add(uint8(amRTR), (&rtr{dst: 1, sreq: 2, rreq: 3, raddr: 4, length: 5, rkey: []byte{9}}).encode(nil))
	u := make([]byte, userHdr)
	putUserHdr(u, 1, 2, 3)
	f.Add(uint8(amUser), append(u, 1, 2, 3, 4))
	f.Add(uint8(amClose), []byte{1, 0, 0, 0})
	f.Add(uint8(8), []byte{1, 0, 0, 0, 100, 0, 0, 0})
	f.Add(uint8(9), append((&userFrag{dst: 1, id: 2, mid: 3, total: 10, hdr: []byte{7, 7}}).encode(nil), 1, 2, 3))
	f.Add(uint8(9), append((&userFrag{dst: 1, id: 2, mid: 3, total: 10, off: 3}).encode(nil), 4, 5, 6, 7, 8, 9, 10))
	f.Add(uint8(10), (&userRTS{dst: 1, id: 2, sreq: 3, length: 1 << 22, raddr: 5, rkey: []byte{1, 2}, hdr: []byte{3}}).encode(nil))
	f.Add(uint8(10), (&userRTS{dst: 1, id: 2, sreq: 3}).encode(nil))
	f.Add(uint8(100), packBundle([]bundlePart{{"shm", []byte{1, 2}}}))
	f.Fuzz(func(t *testing.T, id uint8, b []byte) {
		check := func(err error) {
			if err != nil && !errors.Is(err, uct.ErrInvalidParam) {
				t.Fatalf("error %v does not wrap ErrInvalidParam", err)
			}
		}
		switch id % 11 {
		case 0:
			m, err := decodeWireup(b)
			check(err)
			if err == nil && !bytes.Equal(m.encode(), b) {
				t.Fatal("wireup round trip")
			}
		case 1:
			tag, dst, data, err := decodeEager(b)
			check(err)
			if err == nil {
				putEagerHdr(h[:], tag, dst)
				if !bytes.Equal(append(h[:], data...), b) {
					t.Fatal("eager round trip")
				}
			}
		case 2:
			m, err := decodeRTS(b)
			check(err)
			if err == nil && !bytes.Equal(m.encode(nil), b) {
				t.Fatal("rts round trip")
			}
		case 3:
			m, err := decodeAck(b)
			check(err)
			if err == nil && !bytes.Equal(m.encode(nil), b) {
				t.Fatal("ack round trip")
			}
		case 4:
			m, err := decodeRTR(b)
			check(err)
			if err == nil && !bytes.Equal(m.encode(nil), b) {
				t.Fatal("rtr round trip")
			}
		case 5:
			_, _, hdr, data, err := decodeUser(b)
			check(err)
			if err == nil && userHdr+len(hdr)+len(data) != len(b) {
				t.Fatal("am lengths")
			}
		case 6:
			_, err := decodeDst(b)
			check(err)
		case 8:
			dst, ms, err := decodeKeepalive(b)
			check(err)
			if err == nil && !bytes.Equal(le.AppendUint32(le.AppendUint32(nil, dst), ms), b) {
				t.Fatal("keepalive round trip")
			}
		case 9:
			m, err := decodeUserFrag(b)
			check(err)
			if err == nil && !bytes.Equal(append(m.encode(nil), m.data...), b) {
				t.Fatal("am fragment round trip")
			}
		case 10:
			m, err := decodeUserRTS(b)
			check(err)
			if err == nil && !bytes.Equal(m.encode(nil), b) {
				t.Fatal("am rts round trip")
			}
		case 7:
			ps, err := decodeBundle(b)
			check(err)
			if err == nil && !bytes.Equal(packBundle(ps), b) {
				t.Fatal("rkey bundle round trip")
			}
		}
	})
}
