//go:build race

package batch

// raceEnabled: the race detector changes allocation counts (sync.Pool drops
// entries at random), so allocation tests skip under it.
const raceEnabled = true
