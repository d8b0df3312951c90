package roce

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestAppendIPIDLongPayloads: Append copies a payload in the pass that
// adds it to the ICRC; for payloads long enough for the folding CRC (and
// odd lengths around its 128-byte steps) the packet must carry the
// payload unchanged and the reference ICRC, through an ICRCCache too.
func TestAppendIPIDLongPayloads(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var c ICRCCache
	for _, n := range []int{511, 512, 513, 639, 640, 1023, 1024, 1025, 2049, 4093, 4095, 4096} {
		for _, o := range []Opcode{OpWriteFirst, OpSendMiddle, OpReadResponseLast} {
			for _, id := range []uint16{0, 7} {
				p := samplePacket(o, n)
				for j := range p.Payload {
					p.Payload[j] = byte(r.Uint32())
				}
				for _, b := range [][]byte{
					AppendIPID([]byte("prefix"), &p, hostAP, vmAP, id)[6:],
					c.AppendIPID(nil, &p, hostAP, vmAP, id),
				} {
					h := p.HeaderLen()
					if len(b) != p.WireLen() || !bytes.Equal(b[h:h+n], p.Payload) {
						t.Fatalf("%v n=%d: payload not carried unchanged", o, n)
					}
					got := binary.LittleEndian.Uint32(b[len(b)-ICRCLen:])
					if want := refICRC(b, hostAP, vmAP, id, true); got != want {
						t.Fatalf("%v n=%d id=%d: ICRC %08x, reference %08x", o, n, id, got, want)
					}
				}
			}
		}
	}
}
