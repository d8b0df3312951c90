package ucp

import (
	"fmt"
	"math"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

// ErrorMode says how much the worker does about failing peers.
type ErrorMode int

const (
	// ErrorModeNone: failures put the endpoint in error state and fail its
	// requests, but no error callback is called, matching is never
	// suspended and no keepalive runs.
	ErrorModeNone ErrorMode = iota
	// ErrorModePeer: every request completes even after force close or
	// peer death, each endpoint's error callback is called once, tag
	// matching follows MatchingMode, and keepalive watches silent peers.
	ErrorModePeer
)

func (m ErrorMode) String() string {
	if m == ErrorModePeer {
		return "peer"
	}
	return "none"
}

// MatchingMode says what tag matching does when an endpoint fails (Peer
// error mode only).
type MatchingMode int

const (
	// MatchingSuspend (default) stops tag matching on a failure until
	// ResumeMatching or Purge.
	MatchingSuspend MatchingMode = iota
	// MatchingNeverSuspend keeps matching; receives that can only match the
	// failed peer complete with its error.
	MatchingNeverSuspend
)

// Config configures a Context. The zero value is usable. A field the
// program sets (to a non-zero value) is used as set; a field left at its
// zero value takes the value of its UCGO_* environment variable if there
// is one, else a default (see "Configuration precedence" in the package
// doc).
type Config struct {
	// Transports are the uct components to use, in preference order.
	// Nil means the built-in ones (DefaultTransports).
	Transports []uct.Component

	// ShortThresh: messages up to this size go eager short (one AMShort,
	// no request state). 0 picks the AM lane's limit; -1 disables.
	ShortThresh int
	// ZcopyThresh: eager messages from this size use AMZcopy instead of
	// AMBcopy. 0 picks, per AM lane, the transport's estimate
	// (uct.IfaceAttr.AMZcopyMin: rc never, its AMZcopy copies as AMBcopy
	// does), else 4096 (shm).
	ZcopyThresh int
	// RndvThresh: messages from this size use rendezvous. 0 picks the
	// largest eager message the AM lane carries in one fragment (or 8192).
	// Messages that do not fit one eager fragment always use rendezvous.
	// Active messages larger than one fragment go eager in fragments
	// below it and by rendezvous from it ("inf", ThreshInf: always in
	// fragments).
	RndvThresh int
	// RndvScheme picks the rendezvous data mover: RndvGet (default, the
	// receiver GETs the sender's buffer) or RndvPut (the receiver sends a
	// ready-to-receive with its buffer's key and the sender PUTs).
	RndvScheme RndvScheme

	// ErrorMode is None (default) or Peer.
	ErrorMode ErrorMode
	// KeepaliveInterval is the period of liveness checks and heartbeats
	// in Peer mode (default 1s; negative disables).
	KeepaliveInterval time.Duration
	// DetectSilentPeers fails, in Peer mode, the endpoint of a peer none
	// of whose heartbeats arrived for three of its keepalive intervals,
	// even though its process and lanes are alive: it is stopped, hung or
	// cut off, or it has not called Progress for that long. Off by
	// default, because a healthy peer in a long compute phase without
	// Progress looks the same; dead peers are detected either way.
	DetectSilentPeers bool
	// MatchingMode is Suspend (default) or NeverSuspend.
	MatchingMode MatchingMode
	// SourceTagMask names the tag bits that carry the sender's rank;
	// EPParams.SourceTag gives each endpoint's value. Needed to tell
	// which posted receives can only match a failed peer.
	SourceTagMask uint64
	// ThreadSafe makes workers safe for use by several goroutines.
	ThreadSafe bool

	// AMReassemblyMax bounds the memory a worker holds for active
	// messages being reassembled from fragments, all peers together;
	// AMReassemblyPeerMax bounds it per peer. Memory is taken as
	// fragments arrive; a message that would exceed either limit fails
	// alone (WorkerStats.AMReassemblyDrops, a DropEvent). 0 picks 1 GiB
	// and 256 MiB.
	AMReassemblyMax     int
	AMReassemblyPeerMax int

	// Failover is what an endpoint does when one of its lanes fails
	// while the peer stays reachable (package failover). The zero
	// Policy, Mode failover.Off, fails the endpoint as without it; a
	// Policy with another Mode takes failover.DefaultPolicy's values
	// for the numbers it leaves at zero (FailBack is used as set).
	// UCGO_FAILOVER=same|any, for a program that left Failover zero,
	// picks failover.DefaultPolicy with that Mode.
	Failover failover.Policy

	// NetDevices names the netdevs rc runs on (like UCX_NET_DEVICES):
	// one rc component per netdev, so every worker has one rc iface per
	// netdev and an endpoint one rc lane per reachable pair of devices.
	// {"all"} picks every netdev that is up, not loopback and has IPv4.
	// It applies to the transports NewContext chooses (Transports nil, or
	// set by UCGO_TLS); nil keeps rc on one netdev.
	NetDevices []string
	// MaxRndvRails bounds the rails (rc lanes of equal capability, one
	// per NIC pair) over which rendezvous data and large Put and Get
	// transfers are striped, like UCX_MAX_RNDV_RAILS; 0 picks 2, 1 turns
	// striping off.
	MaxRndvRails int
	// StripeAlways stripes every transfer striping can take, as UCX
	// does, instead of letting each endpoint's rail gate measure whether
	// striping moves more than one rail (railgate.go).
	StripeAlways bool

	// RcacheMax bounds the bytes of unused rendezvous registrations a
	// worker keeps cached (each keeps its buffer alive); 0 picks 64 MiB.
	// An endpoint's entries are released when it is closed or purged.
	RcacheMax int

	// chunkMax, when positive, bounds the chunks of RMA and rendezvous
	// transfers below the lane's zcopy limits: a test hook, so that a
	// transfer of a few MiB is chunked (and meets back-pressure) as one
	// above 1 GiB would.
	chunkMax int
}

// RndvScheme is a rendezvous protocol.
type RndvScheme int

const (
	// RndvGet: the receiver reads the sender's buffer (GetZcopy).
	RndvGet RndvScheme = iota
	// RndvPut: the sender writes into the receiver's buffer (PutZcopy).
	RndvPut
)

// DefaultTransports returns the built-in transports that work on this
// machine: shm, and rc (RoCEv2 from user space, on the first netdev that
// is up, not loopback and has an IPv4 address) when there is such a
// netdev. Endpoints use shm lanes between workers on the same host and rc
// lanes otherwise.
func DefaultTransports() []uct.Component {
	ts := []uct.Component{shm.New()}
	if rcUsable() {
		ts = append(ts, rc.New(rc.Config{}))
	}
	return ts
}

// builtinTransports are the transports UCGO_TLS can name when
// Config.Transports is nil, usable here or not.
func builtinTransports() []uct.Component {
	return []uct.Component{shm.New(), rc.New(rc.Config{})}
}

// rcUsable reports whether a netdev is up, not loopback and has an IPv4
// address: rc over loopback only reaches this host, where shm is better.
func rcUsable() bool {
	ifs, err := net.Interfaces()
	if err != nil {
		return false
	}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		as, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range as {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				return true
			}
		}
	}
	return false
}

// Environment variables read by NewContext.
const (
	EnvTLS          = "UCGO_TLS"
	EnvShortThresh  = "UCGO_SHORT_THRESH"
	EnvZcopyThresh  = "UCGO_ZCOPY_THRESH"
	EnvRndvThresh   = "UCGO_RNDV_THRESH"
	EnvRndvScheme   = "UCGO_RNDV_SCHEME"
	EnvErrMode      = "UCGO_ERR_MODE"
	EnvKeepalive    = "UCGO_KEEPALIVE_INTERVAL"
	EnvSilentPeers  = "UCGO_KEEPALIVE_SILENT"
	EnvMatchingMode = "UCGO_MATCHING_MODE"
	EnvThreadSafe   = "UCGO_THREAD_SAFE"
	// EnvAMReassemblyMax and EnvAMReassemblyPeerMax set
	// Config.AMReassemblyMax and AMReassemblyPeerMax.
	EnvAMReassemblyMax     = "UCGO_AM_REASSEMBLY_MAX"
	EnvAMReassemblyPeerMax = "UCGO_AM_REASSEMBLY_PEER_MAX"
	// EnvRcacheMax sets Config.RcacheMax.
	EnvRcacheMax = "UCGO_RCACHE_MAX"
	// EnvFailover sets Config.Failover's Mode: off, same or any.
	EnvFailover = "UCGO_FAILOVER"
)

// applyEnv fills the fields of cfg left at their zero value from the
// environment (getenv is os.Getenv in production); the fields the program
// set keep their values. Bad values are errors wrapping
// uct.ErrInvalidParam, also those of variables whose field is set.
func applyEnv(cfg *Config, getenv func(string) string) error {
	var env Config
	if err := readEnv(&env, getenv); err != nil {
		return err
	}
	have, fill := reflect.ValueOf(cfg).Elem(), reflect.ValueOf(&env).Elem()
	for i := 0; i < have.NumField(); i++ {
		if f := have.Field(i); f.CanSet() && f.IsZero() {
			f.Set(fill.Field(i))
		}
	}
	return nil
}

// readEnv sets the fields of cfg named by UCGO_* variables. UCGO_TLS
// picks among the built-in transports ("all": those that work here).
func readEnv(cfg *Config, getenv func(string) string) error {
	bad := func(k, v string, err error) error {
		return fmt.Errorf("ucp: %s=%q: %w: %w", k, v, uct.ErrInvalidParam, err)
	}
	if v := getenv(EnvTLS); v != "" {
		want := map[string]bool{}
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				want[n] = true
			}
		}
		from := builtinTransports()
		if want["all"] {
			from = DefaultTransports()
		}
		var out []uct.Component
		for _, c := range from {
			if want[c.Name()] || want["all"] {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return bad(EnvTLS, v, fmt.Errorf("no configured transport selected"))
		}
		cfg.Transports = out
	}
	for _, kv := range []struct {
		k string
		p *int
	}{{EnvShortThresh, &cfg.ShortThresh}, {EnvZcopyThresh, &cfg.ZcopyThresh}, {EnvRndvThresh, &cfg.RndvThresh},
		{EnvAMReassemblyMax, &cfg.AMReassemblyMax}, {EnvAMReassemblyPeerMax, &cfg.AMReassemblyPeerMax},
		{EnvRcacheMax, &cfg.RcacheMax}, {EnvMaxRndvRails, &cfg.MaxRndvRails}} {
		if v := getenv(kv.k); v != "" {
			n, err := parseSize(v)
			if err != nil {
				return bad(kv.k, v, err)
			}
			*kv.p = n
		}
	}
	if v := getenv(EnvRndvScheme); v != "" {
		switch strings.ToLower(v) {
		case "get", "get_zcopy":
			cfg.RndvScheme = RndvGet
		case "put", "put_zcopy":
			cfg.RndvScheme = RndvPut
		default:
			return bad(EnvRndvScheme, v, fmt.Errorf("want get or put"))
		}
	}
	if v := getenv(EnvErrMode); v != "" {
		switch strings.ToLower(v) {
		case "none":
			cfg.ErrorMode = ErrorModeNone
		case "peer":
			cfg.ErrorMode = ErrorModePeer
		default:
			return bad(EnvErrMode, v, fmt.Errorf("want none or peer"))
		}
	}
	if v := getenv(EnvKeepalive); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			if s, err2 := strconv.ParseFloat(v, 64); err2 == nil {
				d, err = time.Duration(s*float64(time.Second)), nil
			}
		}
		if err != nil {
			return bad(EnvKeepalive, v, err)
		}
		cfg.KeepaliveInterval = d
		if d == 0 {
			cfg.KeepaliveInterval = -1
		}
	}
	if v := getenv(EnvSilentPeers); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return bad(EnvSilentPeers, v, err)
		}
		cfg.DetectSilentPeers = b
	}
	if v := getenv(EnvMatchingMode); v != "" {
		switch strings.ToLower(v) {
		case "suspend":
			cfg.MatchingMode = MatchingSuspend
		case "never_suspend", "neversuspend", "never":
			cfg.MatchingMode = MatchingNeverSuspend
		default:
			return bad(EnvMatchingMode, v, fmt.Errorf("want suspend or never_suspend"))
		}
	}
	if v := getenv(EnvFailover); v != "" {
		m, err := failover.ParseMode(v)
		if err != nil {
			return bad(EnvFailover, v, err)
		}
		cfg.Failover = failover.Policy{}
		if m != failover.Off {
			cfg.Failover = failover.DefaultPolicy()
			cfg.Failover.Mode = m
		}
	}
	if v := getenv(EnvNetDevices); v != "" {
		devs, err := parseNetDevices(v)
		if err != nil {
			return bad(EnvNetDevices, v, err)
		}
		cfg.NetDevices = devs
	}
	if v := getenv(EnvThreadSafe); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return bad(EnvThreadSafe, v, err)
		}
		cfg.ThreadSafe = b
	}
	if v := getenv(EnvStripeAlways); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return bad(EnvStripeAlways, v, err)
		}
		cfg.StripeAlways = b
	}
	return nil
}

// ThreshInf is the size threshold "inf" sets: no message reaches it.
const ThreshInf = math.MaxInt >> 1

// parseSize parses "8192", "8k", "1m", "inf".
func parseSize(v string) (int, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	if s == "inf" || s == "infinity" {
		return ThreshInf, nil
	}
	mul := 1
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "kb"):
		mul, s = 1<<10, strings.TrimRight(s, "kb")
	case strings.HasSuffix(s, "m"), strings.HasSuffix(s, "mb"):
		mul, s = 1<<20, strings.TrimRight(s, "mb")
	case strings.HasSuffix(s, "g"), strings.HasSuffix(s, "gb"):
		mul, s = 1<<30, strings.TrimRight(s, "gb")
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	if n < -1 {
		return 0, fmt.Errorf("negative size")
	}
	if n > 0 {
		n *= mul
	}
	return n, nil
}

func envOrOS(getenv func(string) string) func(string) string {
	if getenv == nil {
		return os.Getenv
	}
	return getenv
}
