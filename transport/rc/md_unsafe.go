package rc

import "unsafe"

// wordBytes views words as bytes (so the bytes are 8-byte aligned).
func wordBytes(words []uint64) []byte {
	if len(words) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
}
