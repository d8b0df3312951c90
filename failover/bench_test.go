package failover

import "testing"

// BenchmarkSendAck is the sender's cost per message with failover on: one
// Append and, every 16 messages, a cumulative acknowledgement. It must
// allocate nothing once the ring has grown.
func BenchmarkSendAck(b *testing.B) {
	l := NewSendLog[*int](256)
	v := new(int)
	b.ReportAllocs()
	for b.Loop() {
		seq, err := l.Append(v)
		if err != nil {
			b.Fatal(err)
		}
		if seq%16 == 0 {
			l.Ack(seq, nil)
		}
	}
}

// BenchmarkRecvInOrder is the receiver's cost per message: Accept of the
// next number and, every 16, taking the acknowledgement.
func BenchmarkRecvInOrder(b *testing.B) {
	w := NewRecvWindow[*int](64)
	v := new(int)
	var n uint64
	deliver := func(uint64, *int) {}
	b.ReportAllocs()
	for b.Loop() {
		n++
		if _, err := w.Accept(n, v, deliver); err != nil {
			b.Fatal(err)
		}
		if n%16 == 0 {
			w.TakeAck()
		}
	}
}

func TestSendRecvAllocateNothing(t *testing.T) {
	if a := testing.AllocsPerRun(1000, func() {
		l := sendLogForAllocs
		seq, _ := l.Append(nil)
		l.Ack(seq, nil)
		w := recvWindowForAllocs
		w.Accept(w.Delivered()+1, nil, func(uint64, *int) {})
		w.TakeAck()
	}); a != 0 {
		t.Errorf("%v allocations per message", a)
	}
}

var (
	sendLogForAllocs    = func() *SendLog[*int] { l := NewSendLog[*int](8); l.Append(nil); l.Ack(1, nil); return l }()
	recvWindowForAllocs = NewRecvWindow[*int](8)
)
