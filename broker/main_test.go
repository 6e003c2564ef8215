package broker

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// testParallel is how many tests that call t.Parallel run at once when
// go test is given no -parallel. Its default, GOMAXPROCS, suits tests that
// compute; this package's tests mostly wait (for group heartbeats and
// assignment intervals, fetch waits, client backoffs), each on its own
// broker, and two at a time leave two CPUs idle. Fuzzing keeps the default,
// as there -parallel is the number of fuzzing processes.
const testParallel = 8

func TestMain(m *testing.M) {
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["test.parallel"] && !set["test.fuzz"] {
		if err := flag.Set("test.parallel", strconv.Itoa(testParallel)); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
