package fd_test

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/ucgo/ucgo/internal/fd"
)

func ExampleFD() {
	n, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		fmt.Println(err)
		return
	}
	f := fd.New(n)
	fmt.Println(f.Do(func(n int) error {
		_, err := unix.Write(n, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		return err
	}))
	fmt.Println(f.Close(), f.Close())
	fmt.Println(f.Int(), errors.Is(f.Do(func(int) error { return nil }), fd.ErrClosed))
	// Output:
	// <nil>
	// <nil> <nil>
	// -1 true
}
