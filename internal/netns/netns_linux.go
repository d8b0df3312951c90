package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/multierr"
	"golang.org/x/sys/unix"
)

// RunDir is where named network namespaces are bind-mounted, as by
// "ip netns add".
const RunDir = "/run/netns"

// Prefix starts the name of every namespace this package creates.
const Prefix = "ucgo-"

// DefaultMTU fits a RoCE path MTU of 4096 plus all headers.
const DefaultMTU = 9000

// ErrNotRoot is returned when the caller lacks the privileges to create
// network namespaces.
var ErrNotRoot = errors.New("netns: needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN)")

// NS is one named network namespace holding one end of a veth pair.
type NS struct {
	name   string
	path   string
	link   string
	index  int
	prefix netip.Prefix
}

// Name is the namespace's name, as listed by "ip netns list".
func (n *NS) Name() string { return n.name }

// Path is the namespace's bind mount under [RunDir].
func (n *NS) Path() string { return n.path }

// Link is the name of the veth end inside the namespace.
func (n *NS) Link() string { return n.link }

// Index is the interface index of the veth end inside the namespace.
func (n *NS) Index() int { return n.index }

// Addr is the IPv4 address of the veth end.
func (n *NS) Addr() netip.Addr { return n.prefix.Addr() }

// Prefix is the address with its subnet length (/24).
func (n *NS) Prefix() netip.Prefix { return n.prefix }

// Pair is two namespaces joined by a veth pair.
type Pair struct {
	A, B *NS
	MTU  int

	once sync.Once
	err  error
}

type config struct {
	mtu int
}

// Option changes what [NewPair] builds.
type Option func(*config)

// WithMTU sets the MTU of both veth ends (default [DefaultMTU]).
func WithMTU(mtu int) Option { return func(c *config) { c.mtu = mtu } }

// RequireRoot skips the test unless it runs as root.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root: creates network namespaces and veth links")
	}
}

// NewPair creates two network namespaces, named Prefix+"<pid>-<random>-a"
// and "-b", joined by a veth pair with addresses 10.x.y.1/24 (in A) and
// 10.x.y.2/24 (in B), both ends and both loopbacks up, and returns once
// both veth ends are operationally up and one UDP datagram has crossed
// the pair each way, so that the first packet a test sends is not lost.
// x.y is random, so addresses rarely repeat across pairs; they could not
// clash anyway, each pair lives in namespaces of its own. NewPair skips
// the test when not root. tb.Cleanup deletes the links and namespaces;
// [Pair.Close] does it earlier.
func NewPair(tb testing.TB, opts ...Option) (*Pair, error) {
	tb.Helper()
	return forTest(tb, func() (*Pair, bool, error) {
		p, err := newPair(opts)
		return p, p != nil, err
	})
}

// New is [NewPair] for programs: it returns an error wrapping [ErrNotRoot]
// when not root, and the caller must Close the pair (namespaces left by a
// process that died first are removed by the next [Sweep]).
func New(opts ...Option) (*Pair, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	p, err := newPair(opts)
	if err != nil && p != nil {
		err = multierr.Append(err, p.Close())
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// newPair builds the pair; on error the returned pair (if not nil) holds
// what was created and must be closed.
func newPair(opts []Option) (*Pair, error) {
	nm, err := newNaming(opts)
	if err != nil {
		return nil, err
	}
	base, x, y := nm.base, nm.x, nm.y
	p := &Pair{
		A:   &NS{name: base + "-a", link: "ucgo-a", prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, x, y, 1}), 24)},
		B:   &NS{name: base + "-b", link: "ucgo-b", prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, x, y, 2}), 24)},
		MTU: nm.cfg.mtu,
	}
	if err := p.setup(); err != nil {
		return p, err
	}
	return p, nil
}

func (p *Pair) setup() error {
	for _, n := range []*NS{p.A, p.B} {
		path, err := create(n.name)
		if err != nil {
			return err
		}
		n.path = path
	}
	bfd, err := unix.Open(p.B.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", p.B.path, err)
	}
	defer unix.Close(bfd)
	err = p.A.Do(func() error {
		r, err := openRtnl()
		if err != nil {
			return err
		}
		defer r.Close()
		return r.addVeth(p.A.link, p.B.link, bfd, p.MTU, 0)
	})
	if err != nil {
		return err
	}
	for _, n := range []*NS{p.A, p.B} {
		if err := n.configure(); err != nil {
			return err
		}
	}
	// The kernel's link watcher, which may lag, makes a veth end
	// operational (and only then lets it transmit) once both ends are
	// up; then one datagram each way proves the path and leaves both
	// neighbour entries resolved.
	for _, n := range []*NS{p.A, p.B} {
		if err := n.waitRunning(waitCarrier); err != nil {
			return err
		}
	}
	return p.proveLink(waitCarrier)
}

// waitCarrier bounds the wait for a fresh veth end's carrier.
const waitCarrier = 5 * time.Second

func (n *NS) configure() error {
	return n.Do(func() error {
		r, err := openRtnl()
		if err != nil {
			return err
		}
		defer r.Close()
		ifi, err := net.InterfaceByName(n.link)
		if err != nil {
			return fmt.Errorf("netns %s: %w", n.name, err)
		}
		n.index = ifi.Index
		lo, err := net.InterfaceByName("lo")
		if err != nil {
			return fmt.Errorf("netns %s: %w", n.name, err)
		}
		if err := r.addAddr(n.index, n.prefix); err != nil {
			return err
		}
		if err := r.setUp(lo.Index, true); err != nil {
			return err
		}
		return r.setUp(n.index, true)
	})
}

// Sweep deletes namespaces under [RunDir] left by dead processes: names
// Prefix+"<pid>-..." whose pid no longer exists (a test killed before its
// cleanup). Their veth pairs go with them unless something else still
// holds the namespace. NewPair calls it; errors are ignored.
func Sweep() {
	ents, err := os.ReadDir(RunDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), Prefix)
		if !ok {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 {
			continue
		}
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			remove(filepath.Join(RunDir, e.Name()))
		}
	}
}

// Close deletes the veth pair and both namespaces. It is idempotent.
func (p *Pair) Close() error {
	p.once.Do(func() {
		// Deleting the link first frees the veth pair even if some
		// socket or process still pins a namespace.
		if p.A.path != "" && p.A.index != 0 {
			err := p.A.Do(func() error {
				r, err := openRtnl()
				if err != nil {
					return err
				}
				defer r.Close()
				return r.delLink(p.A.index)
			})
			if err != nil && !errors.Is(err, unix.ENODEV) {
				p.err = multierr.Append(p.err, err)
			}
		}
		for _, n := range []*NS{p.A, p.B} {
			if n.path != "" {
				p.err = multierr.Append(p.err, remove(n.path))
			}
		}
	})
	return p.err
}

// SetLink sets the namespace's veth end administratively up or down.
// Down removes its routes, so sends from this side fail; packets sent to
// it from the peer are dropped by the peer's veth.
func (n *NS) SetLink(up bool) error {
	return n.Do(func() error {
		r, err := openRtnl()
		if err != nil {
			return err
		}
		defer r.Close()
		return r.setUp(n.index, up)
	})
}

// Do runs fn on a goroutine locked to an OS thread that is switched into
// the namespace, waits for it and returns its error. Sockets, netlink
// sockets, eBPF links and processes started (cmd.Start) inside fn belong
// to the namespace and stay there afterwards. Goroutines that fn starts do
// not run in the namespace. fn must not call t.FailNow and friends; a
// panic in fn is re-raised on the caller's goroutine.
func (n *NS) Do(fn func() error) error {
	return do(n.path, fn)
}

func do(path string, fn func() error) error {
	type result struct {
		err error
		pan any
		ok  bool
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		var r result
		restore, err := enter(path)
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{err: err, ok: true}
			return
		}
		defer func() {
			if !r.ok {
				r.pan = recover()
			}
			if restore() == nil {
				runtime.UnlockOSThread()
			}
			// Otherwise the goroutine exits locked and the runtime
			// drops the thread with its namespace.
			res <- r
		}()
		r.err = fn()
		r.ok = true
	}()
	r := <-res
	if !r.ok {
		if r.pan == nil {
			panic("netns: fn passed to Do exited its goroutine (t.FailNow or runtime.Goexit)")
		}
		panic(r.pan)
	}
	return r.err
}

// enter switches the calling, locked thread into the namespace at path.
// restore switches it back. If enter fails, the thread is unchanged.
func enter(path string) (restore func() error, err error) {
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("netns: open own namespace: %w", err)
	}
	target, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(orig)
		return nil, fmt.Errorf("netns: open %s: %w", path, err)
	}
	defer unix.Close(target)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		unix.Close(orig)
		return nil, fmt.Errorf("netns: setns %s: %w", path, err)
	}
	return func() error {
		defer unix.Close(orig)
		return unix.Setns(orig, unix.CLONE_NEWNET)
	}, nil
}

var runDirOnce struct {
	sync.Mutex
	done bool
}

// prepareRunDir makes RunDir a shared mount point, as iproute2 does, so
// that namespaces deleted here also vanish from mount namespaces made by
// "ip netns exec".
func prepareRunDir() error {
	runDirOnce.Lock()
	defer runDirOnce.Unlock()
	if runDirOnce.done {
		return nil
	}
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	d, err := os.Open(RunDir)
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	defer d.Close()
	// Other processes (other test binaries, iproute2) do the same dance.
	if err := unix.Flock(int(d.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("netns: lock %s: %w", RunDir, err)
	}
	defer unix.Flock(int(d.Fd()), unix.LOCK_UN)
	err = unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) {
		if err = unix.Mount(RunDir, RunDir, "none", unix.MS_BIND|unix.MS_REC, ""); err == nil {
			err = unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		}
	}
	if err != nil {
		return fmt.Errorf("netns: make %s a shared mount: %w", RunDir, err)
	}
	runDirOnce.done = true
	return nil
}

// create makes a new network namespace and bind-mounts it at RunDir/name.
func create(name string) (string, error) {
	if os.Geteuid() != 0 {
		return "", ErrNotRoot
	}
	if err := prepareRunDir(); err != nil {
		return "", err
	}
	path := filepath.Join(RunDir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0)
	if err != nil {
		return "", fmt.Errorf("netns: %w", err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: open own namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: unshare: %w", err)
			return
		}
		self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		err = unix.Mount(self, path, "none", unix.MS_BIND, "")
		if err != nil {
			err = fmt.Errorf("netns: bind %s: %w", path, err)
		}
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		// Otherwise the goroutine exits locked and the runtime
		// drops the thread with its namespace.
		errc <- err
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}

// remove unmounts and deletes a namespace made by create.
func remove(path string) error {
	err := unix.Unmount(path, unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("netns: unmount %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("netns: %w", err)
	}
	return nil
}

// execFlag, as os.Args[1] of the running binary, asks init to switch into
// the namespace os.Args[2] and exec os.Args[3:]. See [NS.Command].
const execFlag = "-ucgo.netns.exec"

func init() {
	if len(os.Args) < 4 || os.Args[1] != execFlag {
		return
	}
	// Package initialisation runs locked to the main thread, so the
	// namespace switch and the exec happen on the same thread.
	err := func() error {
		fd, err := unix.Open(os.Args[2], unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return err
		}
		prog, err := exec.LookPath(os.Args[3])
		if err != nil {
			return err
		}
		return unix.Exec(prog, os.Args[3:], os.Environ())
	}()
	fmt.Fprintf(os.Stderr, "netns exec %s in %s: %v\n", os.Args[3], os.Args[2], err)
	os.Exit(127)
}

// Command returns a command that runs name with args inside the
// namespace. It re-executes the current binary, which switches into the
// namespace during package initialisation and then execs name (looked up
// in PATH), so the process keeps the caller's mount namespace (and with
// it /sys/fs/bpf), unlike "ip netns exec". cmd.Path and the first
// elements of cmd.Args belong to that trampoline; append further
// arguments to cmd.Args as usual. The calling binary must import this
// package, which any user of NS does.
func (n *NS) Command(name string, args ...string) *exec.Cmd {
	return CommandIn(n.path, name, args...)
}
