package rc

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/ucgo/ucgo/transport/rc/verbs"
	"github.com/ucgo/ucgo/uct"
)

// amRecord installs a handler on every AM id of it that records the id
// and a copy of each message.
type amRecord struct {
	ids  []uint8
	msgs [][]byte
}

func recordAMs(t *testing.T, it uct.Iface) *amRecord {
	t.Helper()
	r := &amRecord{}
	for id := uint8(0); id <= uct.MaxAMID; id++ {
		if err := it.SetAMHandler(id, func(_ any, d []byte, _ uct.AMFlags) {
			r.ids = append(r.ids, id)
			r.msgs = append(r.msgs, bytes.Clone(d))
		}, nil); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// amPair connects an endpoint of a loopback pair's first iface to the
// second, whose AMs it records.
func amPair(t *testing.T) (a, b *Iface, rec *amRecord, ep *Endpoint) {
	t.Helper()
	p := loopPair(t)
	t.Cleanup(p.Cleanup)
	a, b = p.A.(*Iface), p.B.(*Iface)
	rec = recordAMs(t, b)
	ue, err := a.Connect(b.Address(), uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ue.Close() })
	return a, b, rec, ue.(*Endpoint)
}

// rawSend posts a SEND (with imm if withImm) of payload on ep's QP as an
// operation of ep, bypassing the AM framing, and takes a credit as an AM
// does.
func rawSend(t *testing.T, ep *Endpoint, payload []byte, withImm bool, imm uint32) {
	t.Helper()
	if ep.noRoom(true) {
		t.Fatalf("no room for a raw send")
	}
	o, idx := ep.newOp(opSend, "raw_send", nil)
	wr := verbs.SendWR{Opcode: verbs.WRSend}
	if withImm {
		wr.Opcode, wr.Imm = verbs.WRSendWithImm, imm
	}
	if len(payload) > 0 {
		off := ep.takeBounce(o)
		copy(ep.it.txBuf[off:], payload)
		wr.SG = []verbs.SGE{ep.it.txMR.SGE(off, len(payload))}
	}
	if err := ep.postNew(o, idx, &wr); err != nil {
		t.Fatalf("raw send: %v", err)
	}
	ep.credits--
}

// TestAMMalformedDropped: a received message that is no AM reaches no
// handler and breaks nothing: a SEND too short for the AM header, one
// whose header names an id above uct.MaxAMID, a SEND with an immediate
// that is no grant, and a grant-marked SEND with an AM-like payload that
// arrives on a QP that takes AMs. An AM sent after them arrives whole,
// once, under its id. (Reading the id from the immediate, as an AM
// format with the id there does, delivers the immediate-carrying ones;
// reading the header of a message without checking its length or id
// range panics or indexes past the handler table.)
func TestAMMalformedDropped(t *testing.T) {
	a, b, rec, ep := amPair(t)
	rawSend(t, ep, nil, false, 0)
	rawSend(t, ep, []byte{uct.MaxAMID + 1, 'b', 'a', 'd'}, false, 0)
	rawSend(t, ep, []byte{0xff}, false, 0)
	rawSend(t, ep, []byte{1, 'i', 'm', 'm'}, true, 1)
	rawSend(t, ep, []byte{1, 'g', 'r', 'a', 'n', 't'}, true, immGrantOf(5))
	want := pattern(3000, 4)
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for {
		_, err = ep.AMBcopy(7, want[:1000], want[1000:])
		if err != uct.ErrNoResource || time.Now().After(deadline) {
			break
		}
		a.Progress()
		b.Progress()
	}
	if err != nil {
		t.Fatalf("AMBcopy: %v", err)
	}
	for len(rec.ids) == 0 || ep.outstanding() {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: %d messages delivered, endpoint outstanding %v", len(rec.ids), ep.outstanding())
		}
		a.Progress()
		b.Progress()
	}
	if ep.Err() != nil {
		t.Fatalf("endpoint failed: %v", ep.Err())
	}
	if len(rec.ids) != 1 || rec.ids[0] != 7 || !bytes.Equal(rec.msgs[0], want) {
		t.Fatalf("delivered ids %v (first %d bytes), want only the AM of id 7 and %d bytes", rec.ids, len(rec.msgs[0]), len(want))
	}
}

// TestAMGrantsApart: AMs of every id and of sizes from empty to the
// largest cross a window of credits several times over; each arrives
// once, in order, with its id and bytes, none is taken for a grant and
// no grant reaches a handler: the grants return exactly the credits of
// the AMs received, every amWindow/2 of them. (Counting a grant as a
// message, or an AM as a grant, leaves the handler calls or the
// credits off.)
func TestAMGrantsApart(t *testing.T) {
	a, b, rec, ep := amPair(t)
	at := a.Attr()
	sizes := []int{0, 1, 7, 8, 1023, 1024, 1025, 4096, 8192, at.AMMaxBcopy}
	const n = 3*amWindow/2 + 5
	var sent [][]byte
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for i := range n {
		id := uint8(i % (uct.MaxAMID + 1))
		m := pattern(sizes[i%len(sizes)], byte(i))
		for {
			switch i % 3 {
			case 0:
				_, err = ep.AMBcopy(id, m, nil)
			case 1:
				err = ep.AMZcopy(id, nil, [][]byte{m}, nil)
			default:
				m = m[:min(len(m), at.AMMaxShort)]
				err = ep.AMShort(id, uint64(i), m)
				m = append(binary.LittleEndian.AppendUint64(nil, uint64(i)), m...)
			}
			if err != uct.ErrNoResource || time.Now().After(deadline) {
				break
			}
			a.Progress()
			b.Progress()
		}
		if err != nil {
			t.Fatalf("AM %d (id %d, %d bytes): %v", i, id, len(m), err)
		}
		sent = append(sent, m)
	}
	for len(rec.ids) < n || ep.outstanding() || ep.credits != amWindow-n%(amWindow/2) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %d of %d AMs delivered, %d credits (want %d)", len(rec.ids), n, ep.credits, amWindow-n%(amWindow/2))
		}
		a.Progress()
		b.Progress()
	}
	for range 1000 {
		a.Progress()
		b.Progress()
	}
	if len(rec.ids) != n || ep.credits != amWindow-n%(amWindow/2) {
		t.Fatalf("%d AMs delivered and %d credits, want %d and %d", len(rec.ids), ep.credits, n, amWindow-n%(amWindow/2))
	}
	for i := range n {
		if rec.ids[i] != uint8(i%(uct.MaxAMID+1)) || !bytes.Equal(rec.msgs[i], sent[i]) {
			t.Fatalf("AM %d: id %d, %d bytes; want id %d, %d bytes as sent", i, rec.ids[i], len(rec.msgs[i]), i%(uct.MaxAMID+1), len(sent[i]))
		}
	}
}

// TestNetnsAMOneDatagram sends AMs of exactly 8 and 16 KiB between two
// network namespaces and counts the UDP datagrams they
// leave in: one, since every packet of an AM but its last fills the path
// MTU and the last is shorter, which GSO merges. (An AM whose last packet
// carried 4 bytes of immediate besides a full MTU of payload would be
// longer than the others and leave in a datagram of its own.) The
// echoes are checked byte for byte.
func TestNetnsAMOneDatagram(t *testing.T) {
	p := startPeer(t, 5*time.Second)
	mtu := p.it.mtu.Bytes()
	for _, n := range []int{8192, 16384} {
		if n%mtu != 0 {
			t.Fatalf("path MTU %d does not divide %d", mtu, n)
		}
		// A datagram of anything else (the deferred ACK of an echo)
		// may join the count of one message; of three messages, one
		// must go alone in one datagram.
		best := uint64(1 << 62)
		for k := range 3 {
			for range 100 {
				p.it.Progress()
			}
			m := pattern(n, byte(n>>10+k))
			before := p.md.Device().Counters()
			echoes := len(p.echo)
			var err error
			for {
				_, err = p.ep.AMBcopy(amEcho, m, nil)
				if err != uct.ErrNoResource {
					break
				}
				p.it.Progress()
			}
			if err != nil {
				t.Fatalf("AMBcopy of %d bytes: %v", n, err)
			}
			// Progress until the message's packets went out (the
			// doorbell rings at the start of an engine pass, or the
			// device's background pass sends them).
			want := uint64(n / mtu)
			after := p.md.Device().Counters()
			for i := 0; i < 100000 && after.TxPackets-before.TxPackets < want; i++ {
				p.it.Progress()
				after = p.md.Device().Counters()
			}
			pkts, dgrams := after.TxPackets-before.TxPackets, after.TxDatagrams-before.TxDatagrams
			t.Logf("%d bytes: %d packets, %d datagrams", n, pkts, dgrams)
			if pkts < want {
				t.Fatalf("%d bytes: %d packets sent, want at least %d (MTU %d)", n, pkts, want, mtu)
			}
			best = min(best, dgrams)
			p.until("echo", func() bool { return len(p.echo) > echoes })
			if !bytes.Equal(p.echo[echoes], m) {
				t.Fatalf("echo of %d bytes differs (got %d bytes)", n, len(p.echo[echoes]))
			}
		}
		if best != 1 {
			t.Errorf("an AM of %d bytes left in %d datagrams at best, want one", n, best)
		}
	}
	p.quit()
}
