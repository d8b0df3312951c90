package shm

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/uct"
)

// RMA and atomics: every operation is checked against the target's key
// table (RKey.window) and completes before it returns.

func (ep *Endpoint) rkey(op string, rk uct.RKey) (*RKey, error) {
	k, ok := rk.(*RKey)
	if !ok || k == nil {
		return nil, ep.opErr(op, uct.ErrInvalidParam, errors.New("not an shm rkey"))
	}
	if k.pid != ep.peer.PID || k.start != ep.peer.StartTime {
		return nil, ep.opErr(op, uct.ErrRemoteProtection, fmt.Errorf("rkey is for pid %d started at %d, not this endpoint's peer", k.pid, k.start))
	}
	return k, nil
}

func total(iov [][]byte) int {
	n := 0
	for _, b := range iov {
		n += len(b)
	}
	return n
}

func (ep *Endpoint) rma(op string, write bool, iov [][]byte, raddr uint64, rk uct.RKey) (int, error) {
	if err := ep.check(op); err != nil {
		return 0, err
	}
	k, err := ep.rkey(op, rk)
	if err != nil {
		return 0, err
	}
	n := total(iov)
	need := uct.AccessRemoteRead
	if write {
		need = uct.AccessRemoteWrite
	}
	w, err := k.window(ep, raddr, n, need)
	if err != nil {
		return 0, ep.opErr(op, uct.StatusOf(err), err)
	}
	if w != nil {
		off := 0
		for _, b := range iov {
			if write {
				off += copy(w[off:], b)
			} else {
				off += copy(b, w[off:])
			}
		}
		return n, nil
	}
	if n == 0 {
		return 0, nil
	}
	local := iovecs(iov)
	remote := []unix.RemoteIovec{{Base: uintptr(raddr), Len: n}}
	var m int
	if write {
		m, err = unix.ProcessVMWritev(ep.peer.PID, local, remote, 0)
	} else {
		m, err = unix.ProcessVMReadv(ep.peer.PID, local, remote, 0)
	}
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return 0, ep.opErr(op, uct.ErrPeerFailed, err)
		}
		return 0, ep.opErr(op, uct.ErrRemoteProtection, err)
	}
	if m != n {
		return 0, ep.opErr(op, uct.ErrRemoteProtection, fmt.Errorf("short transfer %d of %d", m, n))
	}
	return n, nil
}

// The one-buffer operations on allocated memory first try the key's view
// (Endpoint.direct, directPut for writes): a store into the peer's mapped
// memory, as posix put_short is.

// rma1 is rma of one buffer, out of line so that the fast paths keep a
// small stack frame.
//
//go:noinline
func (ep *Endpoint) rma1(op string, write bool, buf []byte, raddr uint64, rk uct.RKey) (int, error) {
	return ep.rma(op, write, [][]byte{buf}, raddr, rk)
}

func (ep *Endpoint) PutBcopy(buf []byte, raddr uint64, rk uct.RKey) (int, error) {
	if w, ok := ep.directPut(rk, raddr, len(buf)); ok {
		putCopy(w, buf)
		return len(buf), nil
	}
	return ep.rma1("put_bcopy", true, buf, raddr, rk)
}

// PutZcopy completes before it returns (nil).
func (ep *Endpoint) PutZcopy(iov [][]byte, raddr uint64, rk uct.RKey, comp *uct.Completion) error {
	if len(iov) == 1 {
		if w, ok := ep.directPut(rk, raddr, len(iov[0])); ok {
			putCopy(w, iov[0])
			return nil
		}
	}
	_, err := ep.rma("put_zcopy", true, iov, raddr, rk)
	return err
}

// GetBcopy completes before it returns (nil).
func (ep *Endpoint) GetBcopy(dst []byte, raddr uint64, rk uct.RKey, comp *uct.Completion) error {
	if w, ok := ep.direct(rk, raddr, len(dst), uct.AccessRemoteRead); ok {
		copy(dst, w)
		return nil
	}
	_, err := ep.rma1("get_bcopy", false, dst, raddr, rk)
	return err
}

// GetZcopy completes before it returns (nil).
func (ep *Endpoint) GetZcopy(iov [][]byte, raddr uint64, rk uct.RKey, comp *uct.Completion) error {
	if len(iov) == 1 {
		if w, ok := ep.direct(rk, raddr, len(iov[0]), uct.AccessRemoteRead); ok {
			copy(iov[0], w)
			return nil
		}
	}
	_, err := ep.rma("get_zcopy", false, iov, raddr, rk)
	return err
}

func (ep *Endpoint) atomic(op string, aop uct.AtomicOp, size int, value, compare uint64, raddr uint64, rk uct.RKey) (uint64, error) {
	if err := ep.check(op); err != nil {
		return 0, err
	}
	if size != 4 && size != 8 || raddr%uint64(size) != 0 || aop < uct.AtomicAdd || aop > uct.AtomicCSwap {
		return 0, ep.opErr(op, uct.ErrInvalidParam, nil)
	}
	k, err := ep.rkey(op, rk)
	if err != nil {
		return 0, err
	}
	w, err := k.window(ep, raddr, size, uct.AccessRemoteAtomic)
	if err != nil {
		return 0, ep.opErr(op, uct.StatusOf(err), err)
	}
	if w == nil {
		return 0, ep.opErr(op, uct.ErrUnsupported, errors.New("atomics need memory from MD.Alloc"))
	}
	return atomicOp(w, size, int(aop), value, compare), nil
}

// AtomicPost applies Add/And/Or/Xor on MD.Alloc memory.
func (ep *Endpoint) AtomicPost(op uct.AtomicOp, size int, value uint64, raddr uint64, rk uct.RKey) error {
	if op > uct.AtomicXor {
		return ep.opErr("atomic_post", uct.ErrInvalidParam, nil)
	}
	_, err := ep.atomic("atomic_post", op, size, value, 0, raddr, rk)
	return err
}

// AtomicFetch completes before it returns (nil) with the old value in *result.
func (ep *Endpoint) AtomicFetch(op uct.AtomicOp, size int, value, compare uint64, result *uint64, raddr uint64, rk uct.RKey, comp *uct.Completion) error {
	if result == nil {
		return ep.opErr("atomic_fetch", uct.ErrInvalidParam, nil)
	}
	old, err := ep.atomic("atomic_fetch", op, size, value, compare, raddr, rk)
	if err == nil {
		*result = old
	}
	return err
}

const (
	opAdd = iota
	opAnd
	opOr
	opXor
	opSwap
	opCSwap
)
