package testproc_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/testproc"
)

// A package's TestMain registers its roles and hands over to Main; a test
// then starts a child playing one and talks to it over its stdin and
// stdout.
func Example() {
	testproc.Register("greeter", func() error {
		_, err := fmt.Println("hello from", os.Getpid())
		return err
	})
	// func TestMain(m *testing.M) { testproc.Main(m) }
	//
	// func TestGreeter(t *testing.T) {
	testGreeter := func(t testing.TB) {
		c := testproc.Start(t, testproc.Spec{Role: "greeter"})
		var word, from string
		var pid int
		if err := c.Scan(time.Minute, &word, &from, &pid); err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	_ = testGreeter
}
