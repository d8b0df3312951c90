package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The testdata files are client outputs of Debian's ucx_perftest 1.13.1
// (ucx-utils), captured on this project's test machine.
func TestParseUCX(t *testing.T) {
	for _, c := range []struct {
		file string
		want figures
	}{
		{"uct_am_lat_posix_fv.txt", figures{10000, 0.110, 0.491, 0.491, 15.53, 15.53, 2035428, 2035428}},
		{"uct_am_lat_posix_f.txt", figures{10000, 0.466, 40.902, 106.508, 0.19, 0.07, 24449, 9389}},
		{"uct_am_lat_posix_table.txt", figures{200000, 0.467, 5.013, 64.506, 1.52, 0.12, 199476, 15502}},
		{"uct_put_bw_posix_v.txt", figures{200000, 0.581, 4.392, 4.392, 14229.30, 14229.30, 227670, 227670}},
		{"uct_put_bw_tcp_zcopy_fv.txt", figures{1000, 32.762, 1212.018, 2294.980, 51.57, 27.23, 830, 436}},
		{"uct_am_lat_tcp_inf_fv.txt", figures{5000, 8.261, 0, 1347.136, 0, 0.36, 0, 742}},
		{"ucp_tag_lat_shm_fv.txt", figures{10000, 0.497, 116.014, 815.795, 0.07, 0.01, 8620, 1226}},
		{"ucp_tag_bw_shm_table.txt", figures{2000, 88.197, 133.915, 133.915, 7467.43, 7467.43, 7467, 7467}},
		{"ucp_tag_bw_tcp_fv.txt", figures{2000, 6.700, 82.520, 82.520, 757.40, 757.40, 12118, 12118}},
	} {
		t.Run(c.file, func(t *testing.T) {
			got, err := parseUCX(readTestdata(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestParseUCXErrors(t *testing.T) {
	for _, c := range []struct {
		file        string
		unsupported bool
	}{
		{"uct_am_lat_tcp_too_large.txt", true},
		{"uct_put_bw_tcp_unsupported.txt", true},
	} {
		t.Run(c.file, func(t *testing.T) {
			_, err := parseUCX(readTestdata(t, c.file))
			var ue *ucxError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v, want a *ucxError", err)
			}
			if ue.unsupported() != c.unsupported {
				t.Errorf("unsupported() = %v for %q", !c.unsupported, ue.Msgs)
			}
		})
	}
	// A run killed before its end has only progress lines.
	if _, err := parseUCX(readTestdata(t, "uct_am_lat_posix_v_timeout.txt")); !errors.Is(err, errNoResult) {
		t.Errorf("killed run: error %v, want errNoResult", err)
	}
	if _, err := parseUCX(nil); !errors.Is(err, errNoResult) {
		t.Errorf("empty output: error %v, want errNoResult", err)
	}
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzParseUCX(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("Final: 1 2 3 4 5 6 7 8\n"))
	f.Add([]byte("1e400,1,1,1,1,1,1,1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fig, err := parseUCX(b)
		if err != nil {
			if fig != (figures{}) {
				t.Errorf("error %v with figures %+v", err, fig)
			}
			var ue *ucxError
			if !errors.Is(err, errNoResult) && !errors.As(err, &ue) && len(b) < 1<<20 {
				t.Errorf("unexpected error kind: %v", err)
			}
			return
		}
		if fig.Iterations < 0 || fig.LatMedian < 0 || fig.BW < 0 {
			t.Errorf("negative figures %+v", fig)
		}
	})
}
