package bootstrap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// PMI-2 wire format: every command and response is a frame of a 6-byte
// decimal length, padded with spaces (on the left by MPICH, on the right
// by Slurm), then that many
// bytes of "key=value;" fields, the first of them "cmd=NAME;". A ';'
// inside a value is written twice (";;").

// frameHeader is the length of a PMI-2 frame's length field.
const frameHeader = 6

// EncodeCommand2 returns the PMI-2 frame of command cmd with the
// attributes kv (key, value, key, value, ...), escaping ';' in values.
func EncodeCommand2(cmd string, kv ...string) []byte {
	var b strings.Builder
	b.WriteString("cmd=" + cmd + ";")
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(kv[i] + "=" + strings.ReplaceAll(kv[i+1], ";", ";;") + ";")
	}
	return []byte(fmt.Sprintf("%6d", b.Len()) + b.String())
}

// DecodeFrame2 decodes one PMI-2 frame at the start of b and returns it
// with the number of bytes it took. A frame that is cut short, has a bad
// length field or a malformed body yields an error wrapping ErrProtocol.
func DecodeFrame2(b []byte) (Response, int, error) {
	n, err := frameLen(b)
	if err != nil {
		return Response{}, 0, err
	}
	if len(b) < frameHeader+n {
		return Response{}, 0, fmt.Errorf("%w: frame of %d bytes cut short at %d", ErrProtocol, n, len(b)-frameHeader)
	}
	r, err := ParseCommand2(string(b[frameHeader : frameHeader+n]))
	return r, frameHeader + n, err
}

// frameLen decodes a frame's length field: a decimal number padded with
// spaces, on the left (MPICH's "%6u") or on the right (Slurm's "%-6d").
func frameLen(b []byte) (int, error) {
	if len(b) < frameHeader {
		return 0, fmt.Errorf("%w: frame header of %d bytes", ErrProtocol, len(b))
	}
	h := strings.Trim(string(b[:frameHeader]), " ")
	n, err := strconv.Atoi(h)
	if err != nil || n < 0 || h == "" || h[0] == '+' || h[0] == '-' {
		return 0, fmt.Errorf("%w: frame length %q", ErrProtocol, b[:frameHeader])
	}
	if n > maxLine {
		return 0, fmt.Errorf("%w: frame of %d bytes exceeds %d", ErrProtocol, n, maxLine)
	}
	return n, nil
}

// readFrame2 reads one frame from r.
func readFrame2(r *bufio.Reader) (Response, error) {
	var hdr [frameHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Response{}, eofErr(err)
	}
	n, err := frameLen(hdr[:])
	if err != nil {
		return Response{}, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return Response{}, eofErr(err)
	}
	return ParseCommand2(string(body))
}

func eofErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("process manager closed the connection: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// ParseCommand2 decodes the body of a PMI-2 frame,
// "cmd=NAME;key=value;...;". The last field's ';' may be missing; ";;"
// in a value is a ';'. Keys must be non-empty and hold no ';'; a missing
// or non-leading cmd, a duplicate key and a NUL or newline are errors.
func ParseCommand2(body string) (Response, error) {
	if len(body) > maxLine {
		return Response{}, fmt.Errorf("%w: body of %d bytes", ErrProtocol, len(body))
	}
	if strings.ContainsAny(body, "\n\x00") {
		return Response{}, fmt.Errorf("%w: control character in %q", ErrProtocol, body)
	}
	r := Response{Attrs: map[string]string{}}
	first := true
	for i := 0; i < len(body); {
		eq := strings.IndexAny(body[i:], "=;")
		if eq <= 0 || body[i+eq] != '=' {
			return Response{}, fmt.Errorf("%w: field at byte %d of %q is not key=value", ErrProtocol, i, body)
		}
		k := body[i : i+eq]
		i += eq + 1
		var v strings.Builder
		for i < len(body) {
			c := body[i]
			if c != ';' {
				v.WriteByte(c)
				i++
				continue
			}
			if i+1 < len(body) && body[i+1] == ';' {
				v.WriteByte(';')
				i += 2
				continue
			}
			i++ // the field's terminator
			break
		}
		switch {
		case first && (k != "cmd" || v.Len() == 0):
			return Response{}, fmt.Errorf("%w: body does not start with cmd=: %q", ErrProtocol, body)
		case first:
			r.Cmd = v.String()
			first = false
			continue
		case k == "cmd":
			return Response{}, fmt.Errorf("%w: second cmd in %q", ErrProtocol, body)
		}
		if _, dup := r.Attrs[k]; dup {
			return Response{}, fmt.Errorf("%w: duplicate %q in %q", ErrProtocol, k, body)
		}
		r.Attrs[k] = v.String()
	}
	if r.Cmd == "" {
		return Response{}, fmt.Errorf("%w: empty command", ErrProtocol)
	}
	return r, nil
}
