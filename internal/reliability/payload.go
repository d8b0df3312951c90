package reliability

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrPayload is wrapped by errors about a payload that does not check.
var ErrPayload = errors.New("reliability: bad payload")

// HeaderLen is the sequence number at the start of every payload.
const HeaderLen = 8

// Fill writes seq and the pattern derived from it into b (at least
// HeaderLen bytes).
func Fill(b []byte, seq uint64) {
	binary.LittleEndian.PutUint64(b, seq)
	for i := HeaderLen; i < len(b); i++ {
		b[i] = byte(seq) + byte(i*7)
	}
}

// Check returns the sequence number of a payload filled by Fill and
// whether every byte is what Fill wrote.
func Check(b []byte) (uint64, error) {
	if len(b) < HeaderLen {
		return 0, fmt.Errorf("%w: %d bytes", ErrPayload, len(b))
	}
	seq := binary.LittleEndian.Uint64(b)
	for i := HeaderLen; i < len(b); i++ {
		if b[i] != byte(seq)+byte(i*7) {
			return seq, fmt.Errorf("%w: seq %d byte %d is %#x, want %#x", ErrPayload, seq, i, b[i], byte(seq)+byte(i*7))
		}
	}
	return seq, nil
}
