package oobexch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
)

// PerftestVersionSize is the size of perftest's version string field
// (MAX_VERSION), sent NUL-padded.
const PerftestVersionSize = 16

// PerftestSession runs perftest's ethernet (non rdma_cm) handshake over an
// established TCP connection. Every step is a fixed-size swap: the client
// writes its part then reads the server's; the server reads then writes.
// Integers are big-endian, as perftest's hton_int/hton_long send them.
type PerftestSession struct {
	RW     io.ReadWriter
	Client bool
	// RemoteVersion is the peer's version once ExchangeVersions returned.
	RemoteVersion string
}

func (s *PerftestSession) xchg(mine []byte) ([]byte, error) {
	theirs := make([]byte, len(mine))
	if s.Client {
		if _, err := s.RW.Write(mine); err != nil {
			return nil, err
		}
	}
	if _, err := io.ReadFull(s.RW, theirs); err != nil {
		return nil, err
	}
	if !s.Client {
		if _, err := s.RW.Write(mine); err != nil {
			return nil, err
		}
	}
	return theirs, nil
}

// ExchangeVersions swaps the 16-byte version strings (exchange_versions).
// perftest 4.5 refuses peers older than 5.70.
func (s *PerftestSession) ExchangeVersions(version string) error {
	if len(version) >= PerftestVersionSize {
		return fmt.Errorf("%w: version %q too long", ErrFormat, version)
	}
	mine := make([]byte, PerftestVersionSize)
	copy(mine, version)
	theirs, err := s.xchg(mine)
	if err != nil {
		return fmt.Errorf("perftest version exchange: %w", err)
	}
	if i := bytes.IndexByte(theirs, 0); i >= 0 {
		theirs = theirs[:i]
	}
	s.RemoteVersion = string(theirs)
	return nil
}

func (s *PerftestSession) remoteAtLeast(v float64) bool {
	f, err := strconv.ParseFloat(s.RemoteVersion, 64)
	return err == nil && f >= v
}

// SysData swaps cycle buffer and cache line sizes (check_sys_data, only
// with peers from version 5.32) and returns the larger of each.
func (s *PerftestSession) SysData(cycleBuffer, cacheLine int32) (int32, int32, error) {
	if !s.remoteAtLeast(5.32) {
		return cycleBuffer, cacheLine, nil
	}
	out := [2]int32{cycleBuffer, cacheLine}
	for i := range out {
		theirs, err := s.xchg(binary.BigEndian.AppendUint32(nil, uint32(out[i])))
		if err != nil {
			return 0, 0, fmt.Errorf("perftest system data exchange: %w", err)
		}
		if r := int32(binary.BigEndian.Uint32(theirs)); r > out[i] {
			out[i] = r
		}
	}
	return out[0], out[1], nil
}

// MTU swaps the ibv_mtu enum values (1 = 256 ... 5 = 4096) as perftest's
// check_mtu does (one decimal digit and a NUL with peers from 5.31) and
// returns the smaller valid one.
func (s *PerftestSession) MTU(mtuEnum int) (int, error) {
	if mtuEnum < 1 || mtuEnum > 5 {
		return 0, fmt.Errorf("%w: ibv_mtu %d", ErrFormat, mtuEnum)
	}
	if !s.remoteAtLeast(5.1) {
		return mtuEnum, nil
	}
	size := 4
	if s.remoteAtLeast(5.31) {
		size = 2
	}
	mine := make([]byte, size)
	copy(mine, strconv.Itoa(mtuEnum))
	theirs, err := s.xchg(mine)
	if err != nil {
		return 0, fmt.Errorf("perftest MTU exchange: %w", err)
	}
	r, err := strconv.Atoi(cstring(theirs))
	if err == nil && r >= 1 && r <= 5 && r < mtuEnum {
		return r, nil
	}
	return mtuEnum, nil
}

// HandShake swaps KEY_PRINT_FMT_GID messages (ctx_hand_shake); perftest also
// uses it as a barrier.
func (s *PerftestSession) HandShake(mine PerftestKey) (PerftestKey, error) {
	msg, err := mine.MarshalBinary()
	if err != nil {
		return PerftestKey{}, err
	}
	theirs, err := s.xchg(msg)
	if err != nil {
		return PerftestKey{}, fmt.Errorf("perftest key exchange: %w", err)
	}
	return ParsePerftestKey(theirs)
}

// BWReport is what xchg_bw_reports swaps after a bandwidth test.
type BWReport struct {
	Size       uint64
	Iters      uint64
	BWPeak     float64
	BWAvg      float64
	MsgRateAvg float64
}

// ExchangeBWReports swaps bandwidth reports (no per-port report).
func (s *PerftestSession) ExchangeBWReports(mine BWReport) (BWReport, error) {
	var r BWReport
	steps := []struct {
		out  []byte
		into func([]byte)
	}{
		{binary.BigEndian.AppendUint64(nil, mine.Size), func(b []byte) { r.Size = binary.BigEndian.Uint64(b) }},
		{nil, nil},
		{binary.BigEndian.AppendUint64(nil, math.Float64bits(mine.BWPeak)), func(b []byte) { r.BWPeak = math.Float64frombits(binary.BigEndian.Uint64(b)) }},
		{binary.BigEndian.AppendUint64(nil, math.Float64bits(mine.BWAvg)), func(b []byte) { r.BWAvg = math.Float64frombits(binary.BigEndian.Uint64(b)) }},
		{binary.BigEndian.AppendUint64(nil, math.Float64bits(mine.MsgRateAvg)), func(b []byte) { r.MsgRateAvg = math.Float64frombits(binary.BigEndian.Uint64(b)) }},
	}
	if s.remoteAtLeast(5.33) {
		steps[1] = struct {
			out  []byte
			into func([]byte)
		}{binary.BigEndian.AppendUint64(nil, mine.Iters), func(b []byte) { r.Iters = binary.BigEndian.Uint64(b) }}
	} else {
		steps[1] = struct {
			out  []byte
			into func([]byte)
		}{binary.BigEndian.AppendUint32(nil, uint32(mine.Iters)), func(b []byte) { r.Iters = uint64(binary.BigEndian.Uint32(b)) }}
	}
	for _, st := range steps {
		theirs, err := s.xchg(st.out)
		if err != nil {
			return r, fmt.Errorf("perftest report exchange: %w", err)
		}
		st.into(theirs)
	}
	return r, nil
}

// Close runs ctx_close_connection: a last key handshake, then both sides
// write "done" with its NUL (nobody reads it).
func (s *PerftestSession) Close(mine PerftestKey) error {
	if _, err := s.HandShake(mine); err != nil {
		return err
	}
	if _, err := s.RW.Write(DoneMsg); err != nil {
		return fmt.Errorf("perftest close: %w", err)
	}
	return nil
}
