package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The exchange between server and client (and between MPI ranks through
// the PMI key-value space) is a sequence of messages:
//
//	magic "UCGP", version byte, kind byte, then the kind's fields
//
// Integers are unsigned varints (shortest form only), strings and byte strings a varint length
// then the bytes. Over TCP each message is framed by a 4-byte big-endian
// length. The client sends params; the server answers setup (or error);
// the client sends its setup; then one sync message per side and size.

const (
	wireMagic   = "UCGP"
	wireVersion = 1

	maxFrame  = 1 << 16
	maxSizes  = 64
	maxString = 64
	maxBlob   = 4096
)

type msgKind uint8

const (
	kindParams msgKind = 1 + iota
	kindSetup
	kindError
	kindSync
)

// ErrFormat is wrapped by every decoding error.
var ErrFormat = errors.New("perftest exchange: bad message")

// params are the settings both sides of a run must share.
type params struct {
	Test, Transport string
	Sizes           []int
	Iters, Warmup   int
	Window          int
	ErrMode, Wait   string
	Wildcard        bool
}

// setup is one side's iface address and remote-accessible buffer.
type setup struct {
	Addr    []byte // iface address
	RKey    []byte // packed remote key of the buffer
	MemAddr uint64 // remote address of the buffer's first byte
	MemLen  uint64
}

// message is one exchange message; only the part named by Kind is used.
type message struct {
	Kind   msgKind
	Params params
	Setup  setup
	Err    string // kindError
	Seq    uint64 // kindSync
}

func (m *message) encode() []byte {
	b := append([]byte(wireMagic), wireVersion, byte(m.Kind))
	str := func(s []byte) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	num := func(v uint64) { b = binary.AppendUvarint(b, v) }
	switch m.Kind {
	case kindParams:
		p := &m.Params
		str([]byte(p.Test))
		str([]byte(p.Transport))
		num(uint64(len(p.Sizes)))
		for _, s := range p.Sizes {
			num(uint64(s))
		}
		num(uint64(p.Iters))
		num(uint64(p.Warmup))
		num(uint64(p.Window))
		str([]byte(p.ErrMode))
		str([]byte(p.Wait))
		if p.Wildcard {
			num(1)
		} else {
			num(0)
		}
	case kindSetup:
		str(m.Setup.Addr)
		str(m.Setup.RKey)
		num(m.Setup.MemAddr)
		num(m.Setup.MemLen)
	case kindError:
		str([]byte(m.Err))
	case kindSync:
		num(m.Seq)
	}
	return b
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, a...))
	}
}

func (d *decoder) num(what string, max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || n != uvarintLen(v) {
		d.fail("%s: bad varint", what)
		return 0
	}
	d.b = d.b[n:]
	if v > max {
		d.fail("%s: %d > %d", what, v, max)
		return 0
	}
	return v
}

func (d *decoder) bytes(what string, max int) []byte {
	n := int(d.num(what+" length", uint64(max)))
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.fail("%s: %d bytes, %d left", what, n, len(d.b))
		return nil
	}
	v := append([]byte(nil), d.b[:n]...)
	d.b = d.b[n:]
	return v
}

func (d *decoder) str(what string) string {
	v := d.bytes(what, maxString)
	for _, c := range v {
		if c < 0x20 || c > 0x7e {
			d.fail("%s: not printable ASCII", what)
			return ""
		}
	}
	return string(v)
}

// decodeMessage parses one message. Bad input returns an error wrapping
// ErrFormat.
func decodeMessage(b []byte) (message, error) {
	var m message
	if len(b) < len(wireMagic)+2 || string(b[:len(wireMagic)]) != wireMagic {
		return m, fmt.Errorf("%w: no %q magic", ErrFormat, wireMagic)
	}
	if v := b[len(wireMagic)]; v != wireVersion {
		return m, fmt.Errorf("%w: version %d, want %d", ErrFormat, v, wireVersion)
	}
	m.Kind = msgKind(b[len(wireMagic)+1])
	d := &decoder{b: b[len(wireMagic)+2:]}
	switch m.Kind {
	case kindParams:
		p := &m.Params
		p.Test = d.str("test")
		p.Transport = d.str("transport")
		n := int(d.num("size count", maxSizes))
		if d.err == nil && n == 0 {
			d.fail("no sizes")
		}
		for i := 0; i < n && d.err == nil; i++ {
			p.Sizes = append(p.Sizes, int(d.num("size", maxSize)))
			if d.err == nil && p.Sizes[i] == 0 {
				d.fail("size 0")
			}
		}
		p.Iters = int(d.num("iterations", 1<<40))
		p.Warmup = int(d.num("warm-up", 1<<40))
		p.Window = int(d.num("window", 1024))
		p.ErrMode = d.str("error mode")
		p.Wait = d.str("wait mode")
		p.Wildcard = d.num("wildcard", 1) == 1
	case kindSetup:
		m.Setup.Addr = d.bytes("address", maxBlob)
		m.Setup.RKey = d.bytes("rkey", maxBlob)
		m.Setup.MemAddr = d.num("memory address", 1<<64-1)
		m.Setup.MemLen = d.num("memory length", 1<<40)
	case kindError:
		m.Err = string(d.bytes("error", maxBlob))
	case kindSync:
		m.Seq = d.num("sequence", 1<<64-1)
	default:
		return m, fmt.Errorf("%w: unknown kind %d", ErrFormat, m.Kind)
	}
	if d.err != nil {
		return message{}, d.err
	}
	if len(d.b) != 0 {
		return message{}, fmt.Errorf("%w: %d trailing bytes", ErrFormat, len(d.b))
	}
	return m, nil
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

func writeFrame(w io.Writer, m *message) error {
	b := m.encode()
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	_, err := w.Write(append(frame, b...))
	return err
}

func readFrame(r io.Reader) (message, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return message{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return message{}, fmt.Errorf("%w: frame of %d bytes", ErrFormat, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return message{}, err
	}
	return decodeMessage(b)
}
