package ucp

import (
	"encoding/binary"
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

const (
	addrMagic   = 0x57474355 // "UCGW"
	addrVersion = 1
	maxIfaces   = 8
)

// Address is a decoded worker address: the worker's identity, its host and
// one packed iface address per transport.
type Address struct {
	UUID   uint64
	Host   string
	Ifaces []IfaceAddress
}

// IfaceAddress is one transport's iface address inside a worker address.
type IfaceAddress struct {
	Transport string
	Addr      []byte
}

// Pack encodes a: magic u32, version u8, uuid u64, host (u8 length +
// bytes), count u8, then per iface the transport name (u8 length + bytes)
// and the address (u16 length + bytes). All little endian.
func (a Address) Pack() []byte {
	n := 4 + 1 + 8 + 1 + len(a.Host) + 1
	for _, f := range a.Ifaces {
		n += 1 + len(f.Transport) + 2 + len(f.Addr)
	}
	b := make([]byte, 0, n)
	b = binary.LittleEndian.AppendUint32(b, addrMagic)
	b = append(b, addrVersion)
	b = binary.LittleEndian.AppendUint64(b, a.UUID)
	b = append(b, byte(len(a.Host)))
	b = append(b, a.Host...)
	b = append(b, byte(len(a.Ifaces)))
	for _, f := range a.Ifaces {
		b = append(b, byte(len(f.Transport)))
		b = append(b, f.Transport...)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(f.Addr)))
		b = append(b, f.Addr...)
	}
	return b
}

// reader is a bounds-checked little-endian decoder.
type reader struct {
	b   []byte
	err bool
}

func (r *reader) take(n int) []byte {
	if r.err || n < 0 || len(r.b) < n {
		r.err = true
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}
func (r *reader) u8() uint8 {
	if v := r.take(1); v != nil {
		return v[0]
	}
	return 0
}
func (r *reader) u16() uint16 {
	if v := r.take(2); v != nil {
		return binary.LittleEndian.Uint16(v)
	}
	return 0
}
func (r *reader) u32() uint32 {
	if v := r.take(4); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}
func (r *reader) u64() uint64 {
	if v := r.take(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

// UnpackAddress decodes a packed worker address. Bad input gives an error
// wrapping uct.ErrInvalidAddress.
func UnpackAddress(b []byte) (Address, error) {
	bad := func(why string) (Address, error) {
		return Address{}, fmt.Errorf("ucp address: %s: %w", why, uct.ErrInvalidAddress)
	}
	r := reader{b: b}
	if r.u32() != addrMagic {
		return bad("bad magic")
	}
	if v := r.u8(); v != addrVersion {
		return bad(fmt.Sprintf("version %d", v))
	}
	var a Address
	a.UUID = r.u64()
	a.Host = string(r.take(int(r.u8())))
	n := int(r.u8())
	if r.err {
		return bad("short")
	}
	if n == 0 || n > maxIfaces {
		return bad(fmt.Sprintf("%d ifaces", n))
	}
	for i := 0; i < n; i++ {
		name := string(r.take(int(r.u8())))
		addr := r.take(int(r.u16()))
		if r.err {
			return bad("short iface entry")
		}
		if name == "" || len(addr) == 0 {
			return bad("empty iface entry")
		}
		a.Ifaces = append(a.Ifaces, IfaceAddress{Transport: name, Addr: append([]byte(nil), addr...)})
	}
	if len(r.b) != 0 {
		return bad("trailing bytes")
	}
	return a, nil
}
