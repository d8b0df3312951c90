// Package fd gives a file descriptor one owner. An *FD holds a descriptor
// number until Close; Close closes it exactly once, however many
// goroutines call it, and afterwards the FD hands out -1 (Int) or
// ErrClosed (Do), never the old number, which the kernel may already have
// given to another file.
package fd
