//go:build !race

package broker

// raceEnabled reports whether the tests run under the race detector, which
// makes CPU-bound work (decompression) several times slower.
const raceEnabled = false
