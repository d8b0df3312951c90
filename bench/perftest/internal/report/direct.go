package report

// Direct returns the recorder's sample memory for a timing loop that
// writes every iteration's count itself instead of calling AddCount: the
// whole capacity, to be filled from index 0 with counts already
// saturated at 2^32-1, then handed back with Commit. It is nil for a
// recorder that keeps every k-th iteration (runs of more than
// MaxSamples iterations), which only AddCount fills.
func (r *Recorder) Direct() []uint32 {
	if r.stride > 1 {
		return nil
	}
	return r.samples[:cap(r.samples)]
}

// Commit records the first n counts written into Direct's memory as the
// recorder's samples, in place of any it had (n is capped at the
// memory's size).
func (r *Recorder) Commit(n int) {
	if r.stride > 1 {
		return
	}
	r.samples = r.samples[:min(max(n, 0), cap(r.samples))]
}
