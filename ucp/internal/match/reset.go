package match

// Reset returns r, which must not be posted, to a new Recv's state but
// for Data, which it keeps: the worker reuses r with its request. A
// receive that is not posted is on no list (unlinking cleared its links),
// so only what posting set is cleared. Resetting a posted receive panics.
func (r *Recv) Reset() {
	if r.posted {
		panic("match: Reset of a receive that is posted")
	}
	r.Tag, r.Mask, r.seq, r.told = 0, 0, 0, nil
}
