//go:build !amd64

package roce

import "hash/crc32"

// crcUpdate is crc32.Update(c, crc32.IEEETable, p).
func crcUpdate(c uint32, p []byte) uint32 { return crc32.Update(c, crc32.IEEETable, p) }
