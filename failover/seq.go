package failover

// Unwrap32 rebuilds a 64-bit sequence number from the low 32 bits a
// message carries on the wire: the value nearest to ref (the receiver's
// Delivered, or the sender's Acked) with those low bits, never below the
// first 2^32 numbers' epoch. It is exact while fewer than 2^31 messages
// separate the two, which a replay log bounded far below that
// guarantees.
func Unwrap32(ref uint64, low uint32) uint64 {
	base := ref &^ 0xffffffff
	v := base | uint64(low)
	switch {
	case v > ref && v-ref > 1<<31 && base > 0:
		v -= 1 << 32
	case v < ref && ref-v > 1<<31 && base < ^uint64(0)&^0xffffffff:
		v += 1 << 32
	}
	return v
}
