// Package shm is the uct transport between processes on one host.
//
// Each iface owns a memfd segment: a header (magic, version, owner pid,
// process start time, random cookie, futex word, the fd and cookie of the
// MD's key table) followed by a bounded
// multi-producer single-consumer ring of 128-byte cells, each with its own
// bcopy buffer and its own claim word (in an array apart from the cells).
// Peers attach by opening /proc/PID/fd/N and mapping the
// segment MAP_SHARED, so only same-user processes can attach and nothing
// survives the owner. A sender claims a cell with a compare-and-swap of its
// claim word (the one locked instruction of a send), moves the ring's
// tail past it with a plain store (the tail is only where senders start
// looking; one that finds it behind moves it on), writes the cell and
// publishes it with a plain store (release order) to
// the cell's sequence word; the claim's compare-and-swap is the barrier
// that orders the sender's check for a sleeping receiver, so a receiver
// finding its head cell claimed does not sleep. The receiver polls the
// head cell's sequence in Progress and never writes to a cell. A
// Progress delivers at most 16 messages, and hands the cells that the
// call before it delivered back at its start, with one store of how many
// it is done with to a counter of its own (not right after a handler, so
// that the store does not delay what the handler started), which a
// sender reads only when its cached copy says the ring may be full. So
// a cell's cache line moves between the cores twice per message (the
// sender's stores, the receiver's read), a claim word's line stays with
// a lone sender, and the counter's line moves once per Progress, not
// once per message. AMBcopy, and an AMShort that follows another with
// nothing received in between (a stream; prefetch_linux.go), prefetch,
// for writing, the cell four rounds on, so that the next claim does not
// wait for the line of the cell sent before it to come back from the
// receiver's core. Each cell carries its sender's iface (pid and segment fd),
// which Progress hands to handlers installed with SetAMSourceHandler as
// the message's uct.AMSource.
//
// RMA: memory from MD.Alloc is a memfd per allocation that peers map on
// first use (cached in the unpacked remote key), so put/get are plain copies
// and atomics are real atomic instructions on the shared mapping. Memory
// from MD.Register is reached with process_vm_readv/writev; atomics on it
// return uct.ErrUnsupported.
//
// Remote keys name a registration (key id and generation), nothing more.
// Each MD publishes its registrations (generation, base, length, rights,
// memfd) in a key table that only it writes; every iface names the table
// in its segment header, and the initiator maps it read-only and checks
// every RMA against the entry the key names. A key that was edited, or
// whose memory was deregistered, gets uct.ErrRemoteProtection and reaches
// nothing outside a live registration. The unpacked key remembers what
// its last full check found (keyview_linux.go): a one-buffer put or get
// into allocated memory that fits it, on the same endpoint, is a bounds
// compare, one load of the entry's generation word (cleared when the
// memory is deregistered or freed) and the copy, as posix put_short is a
// store into the peer's mapping. On amd64 with AVX the copy of 129 to
// 256 bytes moves 32 bytes per load and store (putcopy_amd64.s), as glibc's
// memcpy under posix put_short does, where runtime.memmove moves 16 bytes
// per instruction at these sizes.
//
// Peer death is watched with a pidfd by one background goroutine per
// endpoint, which waits in Go's network poller (no periodic wake-up, no
// blocking system call); the endpoint then fails every new operation with an
// *uct.OpError wrapping uct.ErrPeerFailed, calls the iface error handler
// and then posts uct.EventPeerFailed to the iface event queue, so whoever
// receives the event knows that the handler has run. No event is posted for
// an endpoint whose Close has begun (the handler itself may close it).
//
// All operations complete before they return (nil) and never invoke their
// Completion, so Flush has nothing outstanding and a dead peer has no
// outstanding operations to fail. Install AM handlers before traffic
// arrives (the handler table is not locked against a concurrent Progress).
//
// A sender claims a cell by writing its pid and the round into the cell's
// claim word before it moves the tail (other senders help the tail past
// a claimed cell, and a tail set back by a late store only points at used
// cells, which they step over), so the tail never passes a cell without a
// known writer.
// A sender SIGKILLed between claiming and publishing leaves its pid behind;
// when the head cell stays claimed and unpublished for 100 ms, the
// receiver checks that process with a pidfd and skips the cell if it is
// gone and the cell is still unpublished (a writer that published the
// cell just before it exited has its message delivered). The check runs
// on the slow path (every 1024 empty polls), never per message.
// A live writer (stopped by SIGSTOP or a debugger, or descheduled) that
// leaves the head cell claimed and unpublished for 100 ms holds the
// FIFO: its cell is neither skipped nor reused, since the writer may
// resume and publish it. The receiver keeps the head on it and delivers
// around it the published cells of every writer that has no unpublished
// cell before them, so each writer's (and so each endpoint's) messages
// keep their order while those of other writers may overtake them, and a
// stopped process does not silence the healthy ones. Those cells are
// handed back once the head passes them, so during a hold the writers
// share the rest of one lap of the ring, after which sends find it full
// until the holder publishes or dies. Iface.HeldFIFO reports the holder,
// since when, and how many holds and messages delivered around them the
// iface has seen (held_linux.go).
// A published cell whose length word exceeds the bcopy buffer (a faulty
// or hostile writer: the send paths refuse such messages) is dropped and
// handed back, counted by BadCells and reported by uct.EventCorruptPacket
// wrapping uct.ErrDataCorrupt, at most once a second.
//
// SetDeviceStatus is the administrative switch of the "memory" device
// (a set of flags: link up or down, RDMA disabled; one event per change):
// disabling it fails every endpoint with uct.ErrLocalNICFailed, completes
// its pending requests, releases it, refuses new connections, stops
// receiving, and makes the peers' endpoints fail with
// uct.ErrRemoteNICFailed.
//
// The package owns its segments, mappings and fds; Close on each object is
// idempotent.
package shm
