package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/ucgo/ucgo/internal/oobexch"
)

type options struct {
	port     int
	dev      string
	ibPort   int
	size     int
	mtu      int
	rxDepth  int
	iters    int
	sl       int
	events   bool
	gidIdx   int
	validate bool
	localIP  string
	wait     time.Duration
	exchOnly bool
	timeout  int
	qpn      uint
	server   string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("rcpingpong", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.port, "p", 18515, "listen on/connect to port")
	fs.StringVar(&o.dev, "d", "", "use network device (default: the one holding -a)")
	fs.IntVar(&o.ibPort, "i", 1, "use port of IB device")
	fs.IntVar(&o.size, "s", 4096, "size of message to exchange")
	fs.IntVar(&o.mtu, "m", 1024, "path MTU")
	fs.IntVar(&o.rxDepth, "r", 500, "number of receives to post at a time")
	fs.IntVar(&o.iters, "n", 1000, "number of exchanges")
	fs.IntVar(&o.sl, "l", 0, "service level value")
	fs.BoolVar(&o.events, "e", false, "sleep on CQ events")
	fs.IntVar(&o.gidIdx, "g", -1, "local port gid index")
	fs.BoolVar(&o.validate, "c", false, "validate received buffer")
	fs.StringVar(&o.localIP, "a", "", "local IP address (GID and RoCEv2 source)")
	fs.DurationVar(&o.wait, "w", 10*time.Second, "client: keep retrying a refused TCP connection this long")
	fs.BoolVar(&o.exchOnly, "x", false, "stop after the TCP exchange")
	fs.IntVar(&o.timeout, "T", 14, "local ACK timeout, 4.096 us * 2^T (0-31)")
	fs.UintVar(&o.qpn, "q", 0x11, "with -x: QPN to advertise")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch fs.NArg() {
	case 0:
	case 1:
		o.server = fs.Arg(0)
	default:
		return nil, fmt.Errorf("at most one server name, got %q", fs.Args())
	}
	switch o.mtu {
	case 256, 512, 1024, 2048, 4096:
	default:
		return nil, fmt.Errorf("invalid MTU %d (256, 512, 1024, 2048 or 4096)", o.mtu)
	}
	if o.timeout < 0 || o.timeout > 31 {
		return nil, fmt.Errorf("invalid timeout %d (0-31)", o.timeout)
	}
	if o.size < 1 || o.rxDepth < 1 || o.iters < 1 {
		return nil, errors.New("size, rx_depth and iters must be positive")
	}
	return o, nil
}

func printAddr(w io.Writer, which string, d oobexch.Dest) {
	// rc_pingpong aligns the two lines: "local address:  LID", "remote address: LID".
	fmt.Fprintf(w, "  %-15s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
		which+" address:", d.LID, d.QPN, d.PSN, netip.AddrFrom16(d.GID))
}

// localGID is the GID advertised: the IPv4-mapped -a address, or all zero
// (no GRH) when -g is not given, as ibv_rc_pingpong does.
func localGID(o *options) ([16]byte, error) {
	if o.gidIdx < 0 {
		return [16]byte{}, nil
	}
	if o.localIP == "" {
		return [16]byte{}, errors.New("-g needs the local address (-a IP)")
	}
	a, err := netip.ParseAddr(o.localIP)
	if err != nil {
		return [16]byte{}, fmt.Errorf("-a: %w", err)
	}
	return oobexch.GIDFromAddr(a), nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.exchOnly {
		gid, err := localGID(o)
		if err != nil {
			return err
		}
		return exchangeOnly(ctx, o, gid, stdout)
	}
	return pingpongMain(ctx, o, stdout, stderr)
}

// exchangeOnly is -x: the TCP exchange with an advertised QPN and no QP.
func exchangeOnly(ctx context.Context, o *options, gid [16]byte, stdout io.Writer) error {
	local := oobexch.Dest{QPN: uint32(o.qpn) & 0xffffff, PSN: rand.Uint32() & 0xffffff, GID: gid}
	_, err := exchange(ctx, o, local, stdout, func(oobexch.Dest) error { return nil })
	return err
}

// exchange prints local, runs the client or server side of the TCP
// exchange (the server calls ready, which brings its QP to RTS, before it
// answers) and prints the remote address.
func exchange(ctx context.Context, o *options, local oobexch.Dest, stdout io.Writer, ready func(oobexch.Dest) error) (oobexch.Dest, error) {
	if o.server != "" {
		printAddr(stdout, "local", local)
		cctx, cancel := context.WithTimeout(ctx, o.wait)
		defer cancel()
		rem, err := clientExchange(cctx, net.JoinHostPort(o.server, strconv.Itoa(o.port)), local)
		if err != nil {
			return rem, err
		}
		printAddr(stdout, "remote", rem)
		return rem, nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(o.localIP, strconv.Itoa(o.port)))
	if err != nil {
		return oobexch.Dest{}, fmt.Errorf("couldn't listen to port %d: %w", o.port, err)
	}
	printAddr(stdout, "local", local)
	rem, err := serverExchange(ctx, ln, func(rem oobexch.Dest) (oobexch.Dest, error) { return local, ready(rem) })
	if err != nil {
		return rem, err
	}
	printAddr(stdout, "remote", rem)
	return rem, nil
}

// pingpongMain is rc_pingpong's main over ucgo's verbs.
func pingpongMain(ctx context.Context, o *options, stdout, stderr io.Writer) (err error) {
	if o.gidIdx > 0 {
		return fmt.Errorf("can't read sgid of index %d (the device has GID index 0 only)", o.gidIdx)
	}
	c, err := initCtx(o)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := c.close(); cerr != nil && err == nil {
			err = fmt.Errorf("couldn't release context: %w", cerr)
		}
	}()
	routs := c.postRecv(o.rxDepth)
	if routs < o.rxDepth {
		return fmt.Errorf("couldn't post receive (%d)", routs)
	}
	if o.events {
		if err := c.cq.ReqNotify(false); err != nil {
			return fmt.Errorf("couldn't request CQ notification: %w", err)
		}
	}
	local := oobexch.Dest{QPN: c.qp.QPNum(), PSN: rand.Uint32() & 0xffffff}
	if o.gidIdx >= 0 {
		local.GID = c.dev.GID().As16()
	}
	rem, err := exchange(ctx, o, local, stdout, func(rem oobexch.Dest) error { return c.connect(local.PSN, rem) })
	if err != nil {
		return err
	}
	if o.server != "" {
		if err := c.connect(local.PSN, rem); err != nil {
			return err
		}
	}
	return c.pingpong(ctx, routs, stdout, stderr)
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		if !errors.Is(err, errReported) {
			fmt.Fprintln(os.Stderr, "rcpingpong:", err)
		}
		os.Exit(1)
	}
}
