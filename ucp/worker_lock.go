package ucp

// Transport access of the goroutine holding a thread-safe worker's
// lock (Worker.tstate).
const (
	tNone = iota // not tried: canPost tries to take tmu
	tMine        // taken by canPost or lockT: unlock releases it
	tHeld        // held around this call by the goroutine (Progress, a uct callback)
	tBusy        // held by another goroutine, or by this one outside this call: work is queued
)

// lock takes the worker's lock (thread-safe worker). Operations call it;
// uct callbacks call lockCB instead.
func (w *Worker) lock() {
	if w.safe {
		w.mu.Lock()
	}
}

// lockCB takes the worker's lock inside a uct callback (AM handler,
// completion), which runs while its goroutine holds the transport lock:
// the callback may post at once.
func (t *transportLock) lockCB() {
	if t.safe {
		t.mu.Lock()
		t.tstate = tHeld
	}
}

// unlockCB releases lockCB's lock. Lanes closed meanwhile are closed by
// the holder of the transport lock before it releases it.
func (w *Worker) unlockCB() {
	if !w.safe && len(w.laneClose) == 0 {
		return
	}
	w.unlockCBSlow()
}

func (w *Worker) unlockCBSlow() {
	if !w.safe {
		w.closeDetached()
		return
	}
	w.tstate = tNone
	w.mu.Unlock()
}

// lockT takes the transport lock, then the worker's, for operations that
// must call into the transports at once (Connect, Close). It blocks, so it
// must not run inside a uct callback.
func (w *Worker) lockT() {
	if w.safe {
		w.acquireT()
		w.mu.Lock()
		w.tstate = tMine
	}
}

// canPost reports whether the holder of the worker's lock may call into
// the transports now (always in a single-goroutine worker). A thread-safe
// worker takes the transport lock if it is free; if not, the caller
// queues its work for the lock's holder, which sends it before releasing
// the lock (releaseT).
func (w *Worker) canPost() bool {
	if !w.safe {
		return true
	}
	switch w.tstate {
	case tNone:
		if w.tmu.TryLock() {
			w.tstate = tMine
			return true
		}
		w.tstate = tBusy
		return false
	case tBusy:
		return false
	}
	return true
}

// unlock releases the worker's lock, then closes the uct endpoints of
// lanes closed meanwhile: their outstanding completions run and lock the
// worker again. A thread-safe worker closes them only while it holds the
// transport lock, since a transport's progress and the endpoint's close
// must not run at once; when another goroutine holds it, that goroutine
// closes them before it releases the lock. The test of a single-goroutine
// worker with no lane to close is small enough to be inlined into the
// operations; the rest is unlockSlow.
func (w *Worker) unlock() {
	if !w.safe && len(w.laneClose) == 0 {
		return
	}
	w.unlockSlow()
}

func (w *Worker) unlockSlow() {
	if !w.safe {
		w.closeDetached()
		return
	}
	if w.tstate != tMine && (len(w.laneClose) == 0 || !w.tmu.TryLock()) {
		if len(w.laneClose) != 0 && w.asleep {
			w.Wake() // the sleeper closes them
		}
		w.tstate = tNone
		w.mu.Unlock()
		return
	}
	w.releaseT()
}

// releaseT releases the transport lock and the worker's lock of a
// thread-safe worker (both held): it first sends the work queued by
// goroutines that could not take the transport lock and closes detached
// lanes (worker lock released meanwhile), so nothing waits for a lock
// nobody holds. Work that meets back-pressure stays in the backlog for
// Progress.
func (w *Worker) releaseT() {
	for {
		if len(w.backlog) != 0 {
			w.tstate = tHeld
			w.drainBacklog()
		}
		w.tstate = tNone
		if len(w.laneClose) == 0 {
			w.tmu.Unlock()
			w.mu.Unlock()
			return
		}
		eps := w.laneClose
		w.laneClose = nil
		w.mu.Unlock()
		for _, e := range eps {
			e.Close()
		}
		w.mu.Lock()
	}
}

// acquireT takes the transport lock of a thread-safe worker (worker lock
// not held), waking a goroutine that sleeps in Wait holding it.
func (w *Worker) acquireT() {
	if w.tmu.TryLock() {
		return
	}
	w.mu.Lock()
	w.tWant++
	if w.asleep {
		w.Wake()
	}
	w.mu.Unlock()
	w.tmu.Lock()
	w.mu.Lock()
	w.tWant--
	w.mu.Unlock()
}

// closeDetached closes the uct endpoints of closed lanes (single-goroutine
// worker, lock released).
func (w *Worker) closeDetached() {
	for len(w.laneClose) > 0 {
		eps := w.laneClose
		w.laneClose = nil
		for _, e := range eps {
			e.Close()
		}
	}
}
