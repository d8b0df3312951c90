//go:build linux

package verbs

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsghdr is struct mmsghdr.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// setMsg points h at one buffer, an optional address and optional
// control data.
func setMsg(h *mmsghdr, iov *unix.Iovec, buf []byte, name *unix.RawSockaddrInet4, ctrl []byte) {
	iov.Base = unsafe.SliceData(buf)
	iov.SetLen(len(buf))
	h.hdr = unix.Msghdr{Iov: iov, Iovlen: 1}
	if name != nil {
		h.hdr.Name = (*byte)(unsafe.Pointer(name))
		h.hdr.Namelen = unix.SizeofSockaddrInet4
	}
	if len(ctrl) > 0 {
		h.hdr.Control = unsafe.SliceData(ctrl)
		h.hdr.SetControllen(len(ctrl))
	}
	h.len = 0
}

// setMsgIov points h at the buffers of iov (which must stay where they
// are until the message is sent), an address and optional control data.
func setMsgIov(h *mmsghdr, iov []unix.Iovec, name *unix.RawSockaddrInet4, ctrl []byte) {
	h.hdr = unix.Msghdr{Iov: unsafe.SliceData(iov)}
	h.hdr.SetIovlen(len(iov))
	h.hdr.Name = (*byte)(unsafe.Pointer(name))
	h.hdr.Namelen = unix.SizeofSockaddrInet4
	if len(ctrl) > 0 {
		h.hdr.Control = unsafe.SliceData(ctrl)
		h.hdr.SetControllen(len(ctrl))
	}
	h.len = 0
}

// iovecOf is the iovec of b.
func iovecOf(b []byte) unix.Iovec {
	v := unix.Iovec{Base: unsafe.SliceData(b)}
	v.SetLen(len(b))
	return v
}

// rawSendMax is the largest batch sent with a raw system call: a few
// short datagrams cost microseconds, never long enough to hold up the
// scheduler or a stop-the-world.
const rawSendMax = 4

// rawSendBytes bounds the bytes of a raw send: copying 16 KiB into the
// kernel takes a few microseconds.
const rawSendBytes = 16 << 10

// sendmmsg sends msgs without blocking. Small batches (a ping-pong
// message and its ACK) go through RawSyscall6: no entersyscall and
// exitsyscall, so no handing the P to another thread and taking it back.
func sendmmsg(fd int, msgs []mmsghdr, raw bool) (int, error) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(msgs)))
	var n uintptr
	var e unix.Errno
	if raw && len(msgs) <= rawSendMax {
		n, _, e = unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(fd), p, uintptr(len(msgs)), unix.MSG_DONTWAIT, 0, 0)
	} else {
		n, _, e = unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), p, uintptr(len(msgs)), unix.MSG_DONTWAIT, 0, 0)
	}
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// sendmsg sends the one message h without blocking: a batch of one
// skips sendmmsg's copying of a header vector. raw as for sendmmsg.
func sendmsg(fd int, h *mmsghdr, raw bool) (int, error) {
	p := uintptr(unsafe.Pointer(&h.hdr))
	var e unix.Errno
	if raw {
		_, _, e = unix.RawSyscall6(unix.SYS_SENDMSG, uintptr(fd), p, unix.MSG_DONTWAIT, 0, 0, 0)
	} else {
		_, _, e = unix.Syscall6(unix.SYS_SENDMSG, uintptr(fd), p, unix.MSG_DONTWAIT, 0, 0, 0)
	}
	if e != 0 {
		return 0, e
	}
	return 1, nil
}

// recvmmsg receives without blocking, through RawSyscall6: the busy-poll
// loop calls it on every pass, and it only ever copies out what waits.
func recvmmsg(fd int, msgs []mmsghdr) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(msgs))), uintptr(len(msgs)), unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// recvmsg receives one datagram into h without blocking, through
// RawSyscall6 as recvmmsg does; it returns 1 and sets h.len, or an error.
func recvmsg(fd int, h *mmsghdr) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&h.hdr)), unix.MSG_DONTWAIT, 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	h.len = uint32(n)
	return 1, nil
}

// putSegmentCmsg writes a UDP_SEGMENT control message for segment size
// seg into b (which must hold unix.CmsgSpace(2) bytes).
func putSegmentCmsg(b []byte, seg uint16) {
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level = unix.SOL_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&b[unix.CmsgLen(0)])) = seg
}

// timerfdSettime is timerfd_settime(fd, 0, spec, NULL) through
// RawSyscall6: Progress pushes the watchdog's timer back with it, and
// it never blocks.
func timerfdSettime(fd int, spec *unix.ItimerSpec) error {
	_, _, e := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(fd), 0, uintptr(unsafe.Pointer(spec)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
