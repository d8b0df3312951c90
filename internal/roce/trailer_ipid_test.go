package roce

import (
	"bytes"
	"testing"
)

// TestAppendTrailerIPID: headers, payload and the trailer for IP ID id
// are what AppendIPID produces for that ID, and the ICRC checks.
func TestAppendTrailerIPID(t *testing.T) {
	for _, o := range []Opcode{OpSendMiddle, OpWriteFirst, OpReadResponseMiddle, OpReadResponseLast} {
		for _, n := range []int{1, 1001, 4096} {
			for _, id := range []uint16{0, 1, 63} {
				p := samplePacket(o, n)
				want := AppendIPID(nil, &p, hostAP, vmAP, id)
				hdr := AppendHeader(nil, &p)
				tr := AppendTrailerIPID(nil, hdr, p.Payload, hostAP, vmAP, id)
				got := append(append(append([]byte(nil), hdr...), p.Payload...), tr...)
				if !bytes.Equal(got, want) {
					t.Fatalf("%v n=%d id=%d: header+payload+trailer differ from AppendIPID", o, n, id)
				}
				if err := CheckICRC(got, hostAP, vmAP); err != nil {
					t.Fatalf("%v n=%d id=%d: %v", o, n, id, err)
				}
			}
		}
	}
}
