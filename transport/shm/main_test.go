package shm

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/testproc"
	"github.com/ucgo/ucgo/uct"
)

// AM ids used between test processes.
const (
	amEcho  = 1 // child echoes the message back on amEcho
	amCount = 3 // child counts; header with top bit set asks for one reply
	amQuit  = 4
	amBlast = 5 // "blast" child to parent: header = pid<<32 | sequence
)

// Child roles: "echo" serves AMs, "pinned" does so on the last CPU,
// "sleepy" waits in Arm/Wait between messages, "claimhang" claims a cell
// of the parent's FIFO and hangs, "blast" sends blastCount messages into
// the parent's FIFO as fast as it takes them, then serves as "echo",
// "badlen" publishes one cell in the parent's FIFO whose length word
// exceeds the bcopy buffer, as a faulty writer would, then serves as
// "echo", "claimstop" claims a cell of the parent's FIFO and stops itself
// before publishing it (claimStop), then serves as "echo", "claimstops"
// does so holdRounds times, sending between its stops (claimStops).
func TestMain(m *testing.M) {
	for _, role := range []string{"echo", "pinned", "sleepy", "claimhang", "blast", "badlen", "claimstop", "claimstops"} {
		testproc.Register(role, func() error { return runChild(role) })
	}
	testproc.Main(m)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// runChild: open an iface and 1 MiB of Alloc memory, print "addr rkey
// memaddr", read the parent's address, connect and serve AMs until amQuit.
func runChild(role string) error {
	if role == "pinned" {
		var set unix.CPUSet
		set.Set(runtime.NumCPU() - 1)
		runtime.LockOSThread()
		unix.SchedSetaffinity(0, &set)
	}
	md := must(New().OpenMD(uct.MDParams{}))
	it := must(md.OpenIface(uct.IfaceParams{}))
	mem := must(md.Alloc(1<<20, uct.AccessAll))
	reg := must(md.Register(make([]byte, 1<<20), uct.AccessAll))
	fmt.Printf("%x %x %d %x %d\n", it.Address(), mem.PackRKey(), mem.Address(), reg.PackRKey(), reg.Address())
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		return err
	}
	peer, err := hex.DecodeString(strings.TrimSpace(line))
	if err != nil {
		return err
	}
	ep, err := it.Connect(peer, uct.EPParams{})
	if err != nil {
		return err
	}
	if role == "claimhang" {
		// Claim a cell in the parent's FIFO and never publish it: the
		// parent kills us "while we write".
		e := ep.(*Endpoint)
		if _, ok := e.tx.reserve(e.it.me); !ok {
			return fmt.Errorf("parent FIFO full")
		}
		time.Sleep(time.Hour)
	}
	if role == "claimstop" {
		if err := claimStop(ep.(*Endpoint)); err != nil {
			return err
		}
	}
	if role == "claimstops" {
		if err := claimStops(ep.(*Endpoint), it); err != nil {
			return err
		}
	}
	if role == "badlen" {
		if err := publishBadLength(ep.(*Endpoint)); err != nil {
			return err
		}
	}
	if role == "blast" {
		if err := blast(ep.(*Endpoint), it); err != nil {
			return err
		}
	}
	quit := false
	count := uint64(0)
	reply := func(data []byte) {
		for {
			_, err := ep.AMBcopy(amEcho, data, nil)
			if err == nil {
				return
			}
			if err != uct.ErrNoResource {
				panic(err)
			}
			runtime.Gosched()
		}
	}
	it.SetAMHandler(amEcho, func(_ any, data []byte, _ uct.AMFlags) { reply(data) }, nil)
	it.SetAMHandler(amCount, func(_ any, data []byte, _ uct.AMFlags) {
		count++
		if data[7]&0x80 != 0 {
			reply(data[:8])
		}
	}, nil)
	it.SetAMHandler(amQuit, func(any, []byte, uct.AMFlags) { quit = true }, nil)
	for !quit {
		if it.Progress() == 0 {
			if role == "sleepy" {
				if it.Arm() == nil {
					it.Wait(timeoutCtx(time.Second))
				}
			}
		}
	}
	return multierrClose(ep, it, mem, reg, md)
}

func multierrClose(cs ...interface{ Close() error }) error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// child is a re-executed test binary serving AMs.
type child struct {
	cmd               *exec.Cmd
	addr, rkey, rkeyR []byte
	memAddr, regAddr  uint64
	stdin             *os.File
}

// childStartup bounds the wait for a child's address.
const childStartup = 60 * time.Second

func startChild(t testing.TB, role string) *child {
	t.Helper()
	p := testproc.Start(t, testproc.Spec{Role: role})
	c := &child{cmd: p.Cmd, stdin: p.Stdin}
	var a, k, kr string
	if err := p.Scan(childStartup, &a, &k, &c.memAddr, &kr, &c.regAddr); err != nil {
		t.Fatalf("reading child address: %v", err)
	}
	c.addr, _ = hex.DecodeString(a)
	c.rkey, _ = hex.DecodeString(k)
	c.rkeyR, _ = hex.DecodeString(kr)
	return c
}

// connect sends our address to the child and connects to it.
func (c *child) connect(t testing.TB, it uct.Iface) uct.Endpoint {
	t.Helper()
	fmt.Fprintf(c.stdin, "%x\n", it.Address())
	ep, err := it.Connect(c.addr, uct.EPParams{})
	if err != nil {
		t.Fatal(err)
	}
	return ep
}
