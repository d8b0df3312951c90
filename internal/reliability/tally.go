package reliability

// Tally is the receiver's record of one ordered stream of sequence
// numbers (each below the bound it was made with): which arrived, how
// many arrived again, how many arrived after a later one, how many were
// corrupted.
type Tally struct {
	seen      []uint64 // bitmap
	max       uint64
	any       bool
	Count     int // distinct numbers delivered
	Dups      int // deliveries of a number already delivered
	Reordered int // deliveries of a number below one delivered before
	Corrupt   int // payloads that did not check
	Range     int // numbers outside the bound
}

// NewTally tracks numbers below n (rounded up to a multiple of 64).
func NewTally(n int) *Tally { return &Tally{seen: make([]uint64, (n+63)/64)} }

// Add records the delivery of seq.
func (t *Tally) Add(seq uint64) {
	if seq >= uint64(len(t.seen))*64 {
		t.Range++
		return
	}
	w, bit := seq/64, uint64(1)<<(seq%64)
	if t.seen[w]&bit != 0 {
		t.Dups++
		return
	}
	t.seen[w] |= bit
	t.Count++
	if t.any && seq < t.max {
		t.Reordered++
	}
	if !t.any || seq > t.max {
		t.max, t.any = seq, true
	}
}

// Has reports whether seq was delivered.
func (t *Tally) Has(seq uint64) bool {
	return seq < uint64(len(t.seen))*64 && t.seen[seq/64]&(1<<(seq%64)) != 0
}

// Bitmap is the set of delivered numbers (for the report to the sender).
func (t *Tally) Bitmap() []uint64 { return t.seen }

// FromBitmap rebuilds a tally's set from Bitmap, with the counts given.
func FromBitmap(b []uint64) *Tally {
	t := &Tally{seen: b}
	for seq := uint64(0); seq < uint64(len(b))*64; seq++ {
		if t.Has(seq) {
			t.Count++
		}
	}
	return t
}
