package roce

import "hash/crc32"

// smallCRC is the length below which crcShort runs the slicing-by-8
// tables itself rather than calling hash/crc32, whose dispatch (a
// once-initialised table, an architecture switch) costs more than the
// few bytes of a header, a pad or a fold's tail.
const smallCRC = 64

// crcShort is crc32.Update(c, crc32.IEEETable, p) for the short pieces
// of a packet's ICRC: nothing to do for an empty p, the tables below
// smallCRC bytes, hash/crc32 above.
func crcShort(c uint32, p []byte) uint32 {
	switch {
	case len(p) == 0:
		return c
	case len(p) < smallCRC:
		return ^rawUpdate(^c, p)
	}
	return crc32.Update(c, crc32.IEEETable, p)
}
