package verbs

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtool ioctl commands and string set (linux/ethtool.h).
const (
	ethtoolGStrings  = 0x1b
	ethtoolGSSetInfo = 0x37
	ethtoolSFeatures = 0x3b
	ethSSFeatures    = 4
	ethGStringLen    = 32
)

// ifreqData is struct ifreq with its ifr_data member.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

func ethtool(fd int, ifname string, data unsafe.Pointer) error {
	var ifr ifreqData
	copy(ifr.name[:], ifname)
	ifr.data = data
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if errno != 0 {
		return errno
	}
	return nil
}

// setFeaturesOff switches off the named netdev features of ifname in the
// calling thread's network namespace, as "ethtool -K ifname name off".
func setFeaturesOff(ifname string, names ...string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// struct ethtool_sset_info with one data word.
	var info struct {
		cmd, reserved uint32
		mask          uint64
		n             uint32
	}
	info.cmd, info.mask = ethtoolGSSetInfo, 1<<ethSSFeatures
	if err := ethtool(fd, ifname, unsafe.Pointer(&info)); err != nil {
		return fmt.Errorf("ETHTOOL_GSSET_INFO %s: %w", ifname, err)
	}
	n := int(info.n)
	// struct ethtool_gstrings: cmd, string_set, len, then the strings.
	gs := make([]byte, 12+n*ethGStringLen)
	binary.NativeEndian.PutUint32(gs[0:], ethtoolGStrings)
	binary.NativeEndian.PutUint32(gs[4:], ethSSFeatures)
	binary.NativeEndian.PutUint32(gs[8:], uint32(n))
	if err := ethtool(fd, ifname, unsafe.Pointer(&gs[0])); err != nil {
		return fmt.Errorf("ETHTOOL_GSTRINGS %s: %w", ifname, err)
	}
	blocks := (n + 31) / 32
	// struct ethtool_sfeatures: cmd, size, then {valid, requested} blocks.
	sf := make([]uint32, 2+2*blocks)
	sf[0], sf[1] = ethtoolSFeatures, uint32(blocks)
	for _, want := range names {
		found := false
		for i := 0; i < n; i++ {
			s := gs[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
			if strings.TrimRight(string(s), "\x00") == want {
				sf[2+2*(i/32)] |= 1 << (i % 32) // valid; requested stays 0
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s: no netdev feature %q", ifname, want)
		}
	}
	if err := ethtool(fd, ifname, unsafe.Pointer(&sf[0])); err != nil {
		return fmt.Errorf("ETHTOOL_SFEATURES %s: %w", ifname, err)
	}
	return nil
}
