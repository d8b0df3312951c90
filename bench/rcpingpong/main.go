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
	if o.size < 1 || o.rxDepth < 1 || o.iters < 1 {
		return nil, errors.New("size, rx_depth and iters must be positive")
	}
	return o, nil
}

func printAddr(w io.Writer, which string, d oobexch.Dest) {
	fmt.Fprintf(w, "  %s address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
		which, d.LID, d.QPN, d.PSN, netip.AddrFrom16(d.GID))
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
	gid, err := localGID(o)
	if err != nil {
		return err
	}
	if !o.exchOnly {
		return errors.New("RoCE data path not available yet (transport/rc/verbs); use -x for the TCP exchange only")
	}
	local := oobexch.Dest{QPN: uint32(o.qpn) & 0xffffff, PSN: rand.Uint32() & 0xffffff, GID: gid}
	if o.server != "" {
		printAddr(stdout, "local", local)
		cctx, cancel := context.WithTimeout(ctx, o.wait)
		defer cancel()
		rem, err := clientExchange(cctx, net.JoinHostPort(o.server, strconv.Itoa(o.port)), local)
		if err != nil {
			return err
		}
		printAddr(stdout, "remote", rem)
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(o.localIP, strconv.Itoa(o.port)))
	if err != nil {
		return fmt.Errorf("couldn't listen to port %d: %w", o.port, err)
	}
	printAddr(stdout, "local", local)
	rem, err := serverExchange(ctx, ln, func(oobexch.Dest) (oobexch.Dest, error) { return local, nil })
	if err != nil {
		return err
	}
	printAddr(stdout, "remote", rem)
	return nil
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "rcpingpong:", err)
		os.Exit(1)
	}
}
