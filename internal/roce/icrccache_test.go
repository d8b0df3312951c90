package roce

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"
	"testing"
)

// cachePairs are endpoint pairs one cache serves in turn: its entry has
// to follow each change of either address or port.
var cachePairs = [][2]netip.AddrPort{
	{hostAP, vmAP},
	{vmAP, hostAP},
	{hostAP, netip.MustParseAddrPort("10.77.0.2:50000")},
	{netip.MustParseAddrPort("10.77.0.1:50000"), vmAP},
	{netip.MustParseAddrPort("192.168.9.3:4791"), vmAP},
	{hostAP, netip.MustParseAddrPort("192.168.9.3:4791")},
	{netip.MustParseAddrPort("[::ffff:10.77.0.1]:4791"), vmAP},
	{host6AP, vm6AP},
	{vm6AP, host6AP},
	{hostAP, vmAP},
}

// TestICRCCacheMatches: a packet built, trailed and checked through one
// ICRCCache, serving endpoint pairs in turn, gets the bytes and the
// verdicts of the uncached functions, for every opcode, a range of
// payload lengths (the length fields change) and IP IDs.
func TestICRCCacheMatches(t *testing.T) {
	var c ICRCCache
	for _, pair := range cachePairs {
		src, dst := pair[0], pair[1]
		for _, o := range allOpcodes() {
			for _, n := range []int{0, 1, 3, 64, 255, 256, 4096} {
				for _, id := range []uint16{0, 1, 0x00ff, 0x0100, 0xbeef} {
					p := samplePacket(o, n)
					want := AppendIPID(nil, &p, src, dst, id)
					got := c.AppendIPID(nil, &p, src, dst, id)
					if !bytes.Equal(got, want) {
						t.Fatalf("%v -> %v %v len %d id %d: cached AppendIPID\n%x\nwant\n%x", src, dst, o, n, id, got, want)
					}
					hdr := AppendHeader(nil, &p)
					tr := c.AppendTrailerIPID(nil, hdr, p.Payload, src, dst, id)
					if wt := AppendTrailerIPID(nil, hdr, p.Payload, src, dst, id); !bytes.Equal(tr, wt) {
						t.Fatalf("%v -> %v %v len %d id %d: cached trailer %x, want %x", src, dst, o, n, id, tr, wt)
					}
					if err := c.CheckICRCID(want, src, dst, id); err != nil {
						t.Fatalf("%v -> %v %v len %d id %d: cached check: %v", src, dst, o, n, id, err)
					}
					bad := bytes.Clone(want)
					bad[len(bad)-1] ^= 0x01
					if (c.CheckICRCID(bad, src, dst, id) == nil) != (CheckICRCID(bad, src, dst, id) == nil) {
						t.Fatalf("%v -> %v %v len %d id %d: cached and uncached checks disagree on a bad ICRC", src, dst, o, n, id)
					}
				}
			}
		}
	}
}

// TestICRCCacheCopyCheck: a CopyCheck verifies packets from peers in
// turn (its cached pseudo-header follows the source) and still rejects a
// packet checked against the wrong source.
func TestICRCCacheCopyCheck(t *testing.T) {
	var k CopyCheck
	for _, pair := range cachePairs {
		src, dst := pair[0], pair[1]
		for _, id := range []uint16{0, 7} {
			p := samplePacket(OpWriteMiddle, 4096)
			wire := AppendIPID(nil, &p, src, dst, id)
			if err := k.Start(wire, p.HeaderLen(), src, dst, id); err != nil {
				t.Fatal(err)
			}
			to := make([]byte, len(p.Payload))
			k.Copy(to)
			if err := k.Check(); err != nil {
				t.Fatalf("%v -> %v id %d: %v", src, dst, id, err)
			}
			if !bytes.Equal(to, p.Payload) {
				t.Fatalf("%v -> %v: payload not copied", src, dst)
			}
		}
	}
	p := samplePacket(OpWriteMiddle, 4096)
	wire := Append(nil, &p, hostAP, vmAP)
	other := netip.MustParseAddrPort("10.77.0.3:4791")
	if err := k.Start(wire, p.HeaderLen(), other, vmAP, 0); err != nil {
		t.Fatal(err)
	}
	k.Copy(make([]byte, len(p.Payload)))
	if err := k.Check(); err == nil {
		t.Fatalf("packet from %v accepted as from %v", hostAP, other)
	}
}

// TestICRCCachePanics: the cached functions refuse what the uncached
// ones refuse, the same way.
func TestICRCCachePanics(t *testing.T) {
	var c ICRCCache
	p := samplePacket(OpSendOnly, 8)
	mustPanic := func(name string, fn func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Fatalf("%s did not panic", name)
			}
		}()
		fn()
	}
	mustPanic("mixed families", func() { c.AppendIPID(nil, &p, hostAP, vm6AP, 0) })
	big := samplePacket(OpSendOnly, maxUDPLen)
	mustPanic("oversized payload", func() { c.AppendIPID(nil, &big, hostAP, vmAP, 0) })
	if err := c.CheckICRCID([]byte{1, 2, 3}, hostAP, vmAP, 0); err == nil {
		t.Fatal("3-byte packet accepted")
	}
	// A pair of mixed families right after a good pair: the cache's
	// family verdict follows the pair.
	good := Append(nil, &p, hostAP, vmAP)
	var k CopyCheck
	for range 2 {
		if err := c.CheckICRCID(good, hostAP, vmAP, 0); err != nil {
			t.Fatal(err)
		}
		if err := c.CheckICRCID(good, hostAP, vm6AP, 0); !errors.Is(err, ErrBadICRC) {
			t.Fatalf("IPv4 -> IPv6 check: %v, want ErrBadICRC", err)
		}
		if err := k.Start(good, p.HeaderLen(), hostAP, vmAP, 0); err != nil {
			t.Fatal(err)
		}
		if err := k.Start(good, p.HeaderLen(), host6AP, vmAP, 0); !errors.Is(err, ErrBadICRC) {
			t.Fatalf("IPv6 -> IPv4 CopyCheck: %v, want ErrBadICRC", err)
		}
	}
}

func FuzzICRCCache(f *testing.F) {
	f.Add([]byte{10, 77, 0, 1, 10, 77, 0, 2}, uint16(4791), uint16(4791), uint16(0), uint16(100), []byte{0x0a, 0, 0xff, 0xff, 0, 0, 0, 0x11, 0, 0, 0, 1})
	f.Add([]byte{192, 168, 1, 1, 127, 0, 0, 1}, uint16(1), uint16(65535), uint16(0xffff), uint16(65000), []byte{0x11})
	f.Fuzz(func(t *testing.T, addrs []byte, sport, dport, id, n uint16, bth []byte) {
		if len(addrs) < 8 {
			return
		}
		src := netip.AddrPortFrom(netip.AddrFrom4([4]byte(addrs[:4])), sport)
		dst := netip.AddrPortFrom(netip.AddrFrom4([4]byte(addrs[4:8])), dport)
		size := BTHLen + ICRCLen + int(n)%(maxUDPLen-BTHLen-ICRCLen+1)
		udp := make([]byte, size)
		copy(udp, bth)
		binary.BigEndian.PutUint16(udp[size-8:], n)
		var c ICRCCache
		for _, d := range []bool{true, false} {
			got := c.prefix(udp, size, src, dst, id, d)
			if want := icrcPrefix(udp, size, src, dst, id, d); got != want {
				t.Fatalf("%v -> %v id %d df %v size %d: cached prefix %#x, want %#x", src, dst, id, d, size, got, want)
			}
		}
		if err := c.CheckICRCID(udp, src, dst, id); (err == nil) != (CheckICRCID(udp, src, dst, id) == nil) {
			t.Fatalf("cached and uncached checks disagree: %v", err)
		}
	})
}

// BenchmarkICRCCache: building a packet's trailer and checking a
// received packet with the pseudo-header cached, against the uncached
// functions, for a header-only packet (where the pseudo-header is most
// of the work) and a full 4096-byte MTU.
func BenchmarkICRCCache(b *testing.B) {
	for _, n := range []int{0, 4096} {
		p := samplePacket(OpWriteMiddle, n)
		hdr := AppendHeader(nil, &p)
		wire := Append(nil, &p, vmAP, hostAP)
		tr := make([]byte, 0, 8)
		b.Run("trailer/"+strconv.Itoa(n)+"/uncached", func(b *testing.B) {
			for b.Loop() {
				tr = AppendTrailerIPID(tr[:0], hdr, p.Payload, hostAP, vmAP, 3)
			}
		})
		b.Run("trailer/"+strconv.Itoa(n)+"/cached", func(b *testing.B) {
			var c ICRCCache
			for b.Loop() {
				tr = c.AppendTrailerIPID(tr[:0], hdr, p.Payload, hostAP, vmAP, 3)
			}
		})
		b.Run("check/"+strconv.Itoa(n)+"/uncached", func(b *testing.B) {
			for b.Loop() {
				if err := CheckICRCID(wire, vmAP, hostAP, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("check/"+strconv.Itoa(n)+"/cached", func(b *testing.B) {
			var c ICRCCache
			for b.Loop() {
				if err := c.CheckICRCID(wire, vmAP, hostAP, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
