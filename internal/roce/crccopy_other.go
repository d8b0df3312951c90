//go:build !amd64

package roce

import "hash/crc32"

// crcCopyUpdate copies src into dst (at least as long) and returns
// crc32.Update(c, crc32.IEEETable, src).
func crcCopyUpdate(c uint32, dst, src []byte) uint32 {
	copy(dst, src)
	return crc32.Update(c, crc32.IEEETable, src)
}
