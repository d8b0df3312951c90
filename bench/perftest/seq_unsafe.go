package main

import (
	"sync/atomic"
	"unsafe"
)

// loadByte atomically reads b[i], which the peer writes through the
// transport. It loads the aligned 32-bit word holding the byte, so b's
// base must be 4-byte aligned (memory from an MD is page-aligned).
func loadByte(b []byte, i int) byte {
	w := i &^ 3
	_ = b[w+3]
	v := atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[w])))
	return (*[4]byte)(unsafe.Pointer(&v))[i&3]
}

// loadUint64 atomically reads the 8-byte aligned word at b[off:].
func loadUint64(b []byte, off int) uint64 {
	_ = b[off+7]
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&b[off])))
}
