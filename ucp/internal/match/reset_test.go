package match

import (
	"reflect"
	"testing"
)

// Reset leaves a matched, a told and a canceled receive as a new one but
// for Data, and refuses a posted one.
func TestRecvReset(t *testing.T) {
	m := newTest(Suspend, 1)
	data := new(int)
	r := &Recv{Tag: tg(1, 5), Mask: exact, Data: data}
	if m.PostRecv(r) != nil || m.Arrive(&Msg{Src: 1, Tag: tg(1, 5)}) != r {
		t.Fatal("expected path did not match")
	}
	r.told = append(r.told, 3)
	r.Reset()
	if !reflect.DeepEqual(*r, Recv{Data: data}) {
		t.Fatalf("reset receive %+v, want a new one with its Data", *r)
	}
	r.Tag, r.Mask = tg(1, 6), exact
	if m.PostRecv(r) != nil {
		t.Fatal("a receive matched with nothing unexpected")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Reset of a posted receive did not panic")
			}
		}()
		r.Reset()
	}()
	if !m.CancelRecv(r) {
		t.Fatal("cancel of a posted receive failed")
	}
	r.Reset()
	if !reflect.DeepEqual(*r, Recv{Data: data}) {
		t.Fatalf("reset canceled receive %+v, want a new one with its Data", *r)
	}
}
