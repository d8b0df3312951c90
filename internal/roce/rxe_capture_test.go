package roce

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"testing"
)

// capturedUDP is one IPv4/UDP datagram from a capture file.
type capturedUDP struct {
	src, dst netip.AddrPort
	ipID     uint16
	df       bool
	payload  []byte
}

// readCapture parses a classic pcap file of Ethernet frames and returns
// its IPv4/UDP datagrams.
func readCapture(t *testing.T, path string) []capturedUDP {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if len(b) < 24 || le.Uint32(b) != 0xa1b2c3d4 || le.Uint32(b[20:]) != 1 {
		t.Fatalf("%s: not a little-endian microsecond pcap of Ethernet frames", path)
	}
	var out []capturedUDP
	for b = b[24:]; len(b) > 0; {
		if len(b) < 16 || len(b) < 16+int(le.Uint32(b[8:])) {
			t.Fatalf("%s: truncated record", path)
		}
		f := b[16 : 16+int(le.Uint32(b[8:]))]
		b = b[16+len(f):]
		if len(f) < 14+20+8 || binary.BigEndian.Uint16(f[12:]) != 0x0800 {
			continue
		}
		ip := f[14:]
		ihl := int(ip[0]&0xf) * 4
		total := int(binary.BigEndian.Uint16(ip[2:]))
		if ip[9] != 17 || total > len(ip) || total < ihl+8 {
			continue
		}
		u := ip[ihl:total]
		src, _ := netip.AddrFromSlice(ip[12:16])
		dst, _ := netip.AddrFromSlice(ip[16:20])
		out = append(out, capturedUDP{
			src:     netip.AddrPortFrom(src, binary.BigEndian.Uint16(u[0:])),
			dst:     netip.AddrPortFrom(dst, binary.BigEndian.Uint16(u[2:])),
			ipID:    binary.BigEndian.Uint16(ip[4:]),
			df:      ip[6]&0x40 != 0,
			payload: u[8:binary.BigEndian.Uint16(u[4:])],
		})
	}
	return out
}

// TestRxeCapture checks the codec against real traffic: testdata/
// rxe-pingpong.pcap was captured on the tap of rxe-vm (Linux 6.1 rdma_rxe,
// unmodified ibv_rc_pingpong) with pp_peer.py as the host side: SEND ONLY
// of 1001 bytes (pad 3) both ways with the VM as server, then SEND
// FIRST/MIDDLE/MIDDLE/LAST of 4096 bytes with the VM as client, each
// answered by an ACK; the host's PSNs wrap through 0xffffff. rxe's
// packets come from source port 49441 with incrementing IP IDs
// (0xcb74..., 0x98a6...), the host's with IP ID 0. Every datagram must
// decode, pass CheckICRC with only its addresses and ports, match the
// byte-by-byte formula with its real IP ID, re-encode to the same bytes
// with AppendIPID and its IP ID, and with Append when the IP ID is 0.
func TestRxeCapture(t *testing.T) {
	pkts := readCapture(t, "testdata/rxe-pingpong.pcap")
	var fromRxe, fromHost, nonzeroID int
	ops := map[Opcode]int{}
	for i, c := range pkts {
		if c.dst.Port() != Port {
			t.Fatalf("datagram %d to port %d", i, c.dst.Port())
		}
		var p Packet
		if err := Decode(c.payload, &p); err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		ops[p.BTH.Opcode]++
		if err := CheckICRC(c.payload, c.src, c.dst); err != nil {
			t.Fatalf("datagram %d (%v, IP ID %#04x): %v", i, p.BTH.Opcode, c.ipID, err)
		}
		trailer := binary.LittleEndian.Uint32(c.payload[len(c.payload)-4:])
		if ref := refICRC(c.payload, c.src, c.dst, c.ipID, c.df); ref != trailer {
			t.Fatalf("datagram %d: ICRC %08x, formula with IP ID %#04x gives %08x", i, trailer, c.ipID, ref)
		}
		if c.ipID != 0 {
			nonzeroID++
		} else if re := Append(nil, &p, c.src, c.dst); !bytes.Equal(re, c.payload) {
			t.Fatalf("datagram %d (IP ID 0): Append gives\n%x\nwant\n%x", i, re, c.payload)
		}
		if !c.df {
			t.Fatalf("datagram %d without DF", i)
		}
		if re := AppendIPID(nil, &p, c.src, c.dst, c.ipID); !bytes.Equal(re, c.payload) {
			t.Fatalf("datagram %d (IP ID %#04x): AppendIPID gives\n%x\nwant\n%x", i, c.ipID, re, c.payload)
		}
		if c.src.Port() == 49441 {
			fromRxe++
		} else {
			fromHost++
		}
		// A corrupted copy must fail (one bit in the middle of the packet).
		bad := bytes.Clone(c.payload)
		bad[len(bad)/2] ^= 0x10
		if err := CheckICRC(bad, c.src, c.dst); !errors.Is(err, ErrBadICRC) {
			t.Fatalf("datagram %d with a flipped bit: %v", i, err)
		}
		// Another source port (as if the sender were someone else) fails.
		other := netip.AddrPortFrom(c.src.Addr(), c.src.Port()^1)
		if err := CheckICRC(c.payload, other, c.dst); !errors.Is(err, ErrBadICRC) {
			t.Fatalf("datagram %d from port %d: %v", i, other.Port(), err)
		}
	}
	t.Logf("%d datagrams: %d from rxe (%d with IP ID != 0), %d from the host; opcodes %v",
		len(pkts), fromRxe, nonzeroID, fromHost, ops)
	if fromRxe < 5 || nonzeroID < 5 || fromHost < 5 || ops[OpSendOnly] == 0 || ops[OpSendFirst] == 0 ||
		ops[OpSendMiddle] == 0 || ops[OpSendLast] == 0 || ops[OpAcknowledge] == 0 {
		t.Fatalf("capture lacks the expected variety: %d rxe, %d nonzero IDs, %d host, %v",
			fromRxe, nonzeroID, fromHost, ops)
	}
}
