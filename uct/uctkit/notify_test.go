package uctkit

import (
	"errors"
	"strings"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

type notifyRec struct {
	order []string
	infos []uct.CompletionInfo
	errs  []error
}

func (r *notifyRec) h(arg any, c uct.CompletionInfo, err error) {
	r.order = append(r.order, arg.(string))
	r.infos = append(r.infos, c)
	r.errs = append(r.errs, err)
}

func TestNotifier(t *testing.T) {
	var n Notifier
	var r notifyRec
	if err := n.Notify(nil, nil); !errors.Is(err, uct.ErrInvalidParam) {
		t.Errorf("Notify(nil) = %v", err)
	}
	// No completion yet: queued.
	n.Notify(r.h, "a")
	n.Notify(r.h, "b")
	n.Notify(r.h, "c")
	if len(r.order) != 0 || n.Waiting() != 3 {
		t.Fatalf("handlers ran before a completion: %v, waiting %d", r.order, n.Waiting())
	}
	n.Completed(uct.CompletionInfo{Queue: uct.NotifyRecv})
	if len(r.order) != 1 || r.order[0] != "a" {
		t.Fatalf("one completion ran %v, want [a]", r.order)
	}
	n.CompletedN(4, uct.CompletionInfo{Queue: uct.NotifyRecv}) // runs b, c; two are remembered
	if strings.Join(r.order, "") != "abc" {
		t.Fatalf("handlers ran as %v, want in completion order a b c", r.order)
	}
	if n.Remembered() != 2 {
		t.Fatalf("remembered %d completions, want 2", n.Remembered())
	}
	n.Notify(r.h, "now1")
	n.Notify(r.h, "now2")
	if len(r.order) != 5 || r.order[4] != "now2" || r.errs[4] != nil {
		t.Fatalf("Notify with waiting completions: %v %v", r.order, r.errs)
	}
	n.Notify(r.h, "later")
	if len(r.order) != 5 || n.Waiting() != 1 {
		t.Fatalf("Notify ran at once with no completion left: %v", r.order)
	}
	n.Notify(r.h, "later2")
	n.Cancel()
	if len(r.order) != 7 || !errors.Is(r.errs[5], uct.ErrCanceled) || !errors.Is(r.errs[6], uct.ErrCanceled) || r.order[5] != "later" {
		t.Fatalf("Cancel ran %v with %v", r.order[5:], r.errs[5:])
	}
	if err := n.Notify(r.h, "x"); !errors.Is(err, uct.ErrClosed) {
		t.Errorf("Notify after Cancel = %v, want ErrClosed", err)
	}
	n.Completed(uct.CompletionInfo{Queue: uct.NotifySend})
	if len(r.order) != 7 {
		t.Error("handler ran after Cancel")
	}
}

// TestNotifierEveryWaitingCompletion: three completions waiting and three
// Notify calls run three handlers, in completion order, each told which
// queue and which endpoint completed.
func TestNotifierEveryWaitingCompletion(t *testing.T) {
	var n Notifier
	var r notifyRec
	type fakeEP struct{ uct.Endpoint }
	e1, e2 := &fakeEP{}, &fakeEP{}
	n.Completed(uct.CompletionInfo{Endpoint: e1, Queue: uct.NotifySend})
	n.Completed(uct.CompletionInfo{Queue: uct.NotifyRecv})
	n.Completed(uct.CompletionInfo{Endpoint: e2, Queue: uct.NotifySend})
	for _, name := range []string{"1", "2", "3"} {
		if err := n.Notify(r.h, name); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(r.order, "") != "123" {
		t.Fatalf("three waiting completions ran handlers %v, want 1 2 3", r.order)
	}
	want := []uct.CompletionInfo{{Endpoint: e1, Queue: uct.NotifySend}, {Endpoint: nil, Queue: uct.NotifyRecv}, {Endpoint: e2, Queue: uct.NotifySend}}
	for i, c := range r.infos {
		if c != want[i] || r.errs[i] != nil {
			t.Errorf("handler %d got %+v, %v; want %+v, nil", i+1, c, r.errs[i], want[i])
		}
	}
	if n.Notify(r.h, "4"); len(r.order) != 3 || n.Waiting() != 1 {
		t.Errorf("a fourth Notify ran with no completion left: %v", r.order)
	}
}

// TestNotifierBacklogBound: completions nobody asks for are remembered up
// to NotifyBacklog; the rest are counted as overflows.
func TestNotifierBacklogBound(t *testing.T) {
	var n Notifier
	n.CompletedN(uct.NotifyBacklog+10, uct.CompletionInfo{Queue: uct.NotifyRecv})
	n.Completed(uct.CompletionInfo{Queue: uct.NotifyRecv})
	if n.Remembered() != uct.NotifyBacklog || n.Overflows() != 11 {
		t.Fatalf("remembered %d, overflows %d; want %d, 11", n.Remembered(), n.Overflows(), uct.NotifyBacklog)
	}
	ran := 0
	n.Notify(func(any, uct.CompletionInfo, error) { ran++ }, nil)
	n.Completed(uct.CompletionInfo{Queue: uct.NotifySend}) // room again: remembered
	if ran != 1 || n.Remembered() != uct.NotifyBacklog || n.Overflows() != 11 {
		t.Fatalf("after one Notify: ran %d, remembered %d, overflows %d", ran, n.Remembered(), n.Overflows())
	}
}

func TestNotifierHandlerMayRenotify(t *testing.T) {
	var n Notifier
	count := 0
	var h uct.NotifyHandler
	h = func(any, uct.CompletionInfo, error) {
		count++
		if count < 3 {
			if err := n.Notify(h, nil); err != nil {
				t.Error(err)
			}
		}
	}
	n.Notify(h, nil)
	n.Completed(uct.CompletionInfo{Queue: uct.NotifyRecv})
	n.Completed(uct.CompletionInfo{Queue: uct.NotifyRecv})
	n.Completed(uct.CompletionInfo{Queue: uct.NotifyRecv})
	if count != 3 {
		t.Errorf("re-arming handler ran %d times over 3 completions, want 3", count)
	}
}

// TestNotifierForget: a closed endpoint's remembered completions stay
// remembered but no longer name it; others' keep theirs.
func TestNotifierForget(t *testing.T) {
	type ep struct{ uct.Endpoint }
	a, b := &ep{}, &ep{}
	var n Notifier
	n.Completed(uct.CompletionInfo{Endpoint: a, Queue: uct.NotifySend})
	n.Completed(uct.CompletionInfo{Endpoint: b, Queue: uct.NotifySend})
	n.Completed(uct.CompletionInfo{Endpoint: a, Queue: uct.NotifySend})
	n.Forget(a)
	var got []uct.CompletionInfo
	for i := 0; i < 3; i++ {
		n.Notify(func(_ any, c uct.CompletionInfo, _ error) { got = append(got, c) }, nil)
	}
	if len(got) != 3 || got[0].Endpoint != nil || got[1].Endpoint != b || got[2].Endpoint != nil || got[0].Queue != uct.NotifySend {
		t.Fatalf("after Forget(a): %+v", got)
	}
}
