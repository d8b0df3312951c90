package bootstrap

// job is what every PMI client learns of its place in the job; PMI1 and
// PMI2 embed it.
type job struct {
	rank, size, appNum int
}

// Rank is this process's rank (0..Size-1).
func (j *job) Rank() int { return j.rank }

// Size is the number of ranks in the job.
func (j *job) Size() int { return j.size }

// AppNum is the application number: the executable's place on an MPMD
// command line (0 without one).
func (j *job) AppNum() int { return j.appNum }
