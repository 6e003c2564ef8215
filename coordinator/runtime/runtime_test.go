package runtime

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A record of the fake coordinator is "partition:value"; its state is the
// values it holds per partition, and the requests it parks.
type rec struct {
	p     int32
	value string
}

type fakeState struct {
	values  map[int32][]string
	loads   [][]int32
	ticks   int
	parked  []ID
	records []rec
	replies []Reply
}

func newFakeState() *fakeState { return &fakeState{values: map[int32][]string{}} }

func (s *fakeState) Replay(_ int64, p int32, b []byte) error {
	if string(b) == "bad" {
		return errors.New("bad batch")
	}
	s.values[p] = append(s.values[p], string(b))
	return nil
}
func (s *fakeState) Loaded(_ int64, parts []int32) { s.loads = append(s.loads, parts) }
func (s *fakeState) Tick(int64)                    { s.ticks++ }
func (s *fakeState) Ready() ([]rec, []Reply) {
	r, a := s.records, s.replies
	s.records, s.replies = nil, nil
	return r, a
}
func (s *fakeState) Abort(code int16) {
	for _, id := range s.parked {
		s.replies = append(s.replies, Reply{ID: id, Result: code})
	}
	s.parked = nil
}

// put applies a value at once and asks for its record.
func (s *fakeState) put(id ID, p int32, v string) {
	s.values[p] = append(s.values[p], v)
	s.records = append(s.records, rec{p, v})
	s.replies = append(s.replies, Reply{ID: id, Result: "ok " + v})
}

type fakeEnv struct {
	mu       sync.Mutex
	logs     map[int32][]string
	failNext error
	reads    []int32
}

func (e *fakeEnv) Append(recs []rec, _ <-chan struct{}) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.failNext; err != nil {
		e.failNext = nil
		return err
	}
	for _, r := range recs {
		e.logs[r.p] = append(e.logs[r.p], r.value)
	}
	return nil
}

func (e *fakeEnv) Read(p int32, fn func([]byte) error) error {
	e.mu.Lock()
	log := slices.Clone(e.logs[p])
	e.reads = append(e.reads, p)
	e.mu.Unlock()
	for _, v := range log {
		if err := fn([]byte(v)); err != nil {
			return err
		}
	}
	return nil
}

func (e *fakeEnv) fail(err error) { e.mu.Lock(); e.failNext = err; e.mu.Unlock() }

var errAppend = errors.New("append failed")

func newTest(t *testing.T, logs map[int32][]string) (*Runtime[*fakeState, rec], *fakeEnv) {
	t.Helper()
	env := &fakeEnv{logs: logs}
	rt := New(Config[*fakeState, rec]{
		Name:      "__fake",
		New:       newFakeState,
		Env:       env,
		TickEvery: time.Hour,
		Fail:      func(res any, code int16) any { return code },
		ErrorCode: func(err error) int16 {
			if errors.Is(err, errAppend) {
				return kerr.CoordinatorNotAvailable.Code
			}
			return kerr.UnknownServerError.Code
		},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	return rt, env
}

func start(t *testing.T, rt *Runtime[*fakeState, rec]) {
	t.Helper()
	if err := rt.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Stop)
}

// values reads the state's values of p on the goroutine.
func values(t *testing.T, rt *Runtime[*fakeState, rec], p int32) []string {
	t.Helper()
	var out []string
	if err := rt.Run(context.Background(), func(s *fakeState, _ int64) { out = slices.Clone(s.values[p]) }); err != nil {
		t.Fatal(err)
	}
	return out
}

func put(t *testing.T, rt *Runtime[*fakeState, rec], p int32, v string) any {
	t.Helper()
	res, err := rt.Call(context.Background(), func(s *fakeState, _ int64, id ID) { s.put(id, p, v) })
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestStartLoadsLedPartitions(t *testing.T) {
	rt, env := newTest(t, map[int32][]string{0: {"a"}, 1: {"b"}, 2: {"c"}})
	rt.Led(0, 0)
	rt.Led(2, 0)
	start(t, rt)
	if got := values(t, rt, 0); !slices.Equal(got, []string{"a"}) {
		t.Errorf("partition 0: %v", got)
	}
	if got := values(t, rt, 1); got != nil {
		t.Errorf("partition 1, not led, loaded: %v", got)
	}
	if got := values(t, rt, 2); !slices.Equal(got, []string{"c"}) {
		t.Errorf("partition 2: %v", got)
	}
	if !slices.Equal(env.reads, []int32{0, 2}) {
		t.Errorf("read %v, want partitions 0 and 2 in order", env.reads)
	}
}

func TestStartFailedLoad(t *testing.T) {
	rt, _ := newTest(t, map[int32][]string{0: {"bad"}})
	rt.Led(0, 0)
	if err := rt.Start(); err == nil {
		t.Fatal("a failed load started the runtime")
	}
}

func TestAppendThenAnswerInOrder(t *testing.T) {
	rt, env := newTest(t, map[int32][]string{})
	rt.Led(0, 0)
	start(t, rt)
	for _, v := range []string{"x", "y", "z"} {
		if got := put(t, rt, 0, v); got != "ok "+v {
			t.Fatalf("answer %v", got)
		}
		// The answer came after the record was appended.
		env.mu.Lock()
		last := env.logs[0][len(env.logs[0])-1]
		env.mu.Unlock()
		if last != v {
			t.Fatalf("answered %q before its record was appended (log ends with %q)", v, last)
		}
	}
	if got := values(t, rt, 0); !slices.Equal(got, []string{"x", "y", "z"}) {
		t.Errorf("events out of order: %v", got)
	}
}

func TestFailedAppendRevertsAndFails(t *testing.T) {
	rt, env := newTest(t, map[int32][]string{0: {"a"}})
	rt.Led(0, 0)
	start(t, rt)
	// A parked request, answered only by Abort.
	parked := make(chan any, 1)
	go func() {
		res, _ := rt.Call(context.Background(), func(s *fakeState, _ int64, id ID) { s.parked = append(s.parked, id) })
		parked <- res
	}()
	waitFor(t, func() bool {
		var n int
		rt.Run(context.Background(), func(s *fakeState, _ int64) { n = len(s.parked) })
		return n == 1
	})
	env.fail(errAppend)
	if got := put(t, rt, 0, "lost"); got != kerr.CoordinatorNotAvailable.Code {
		t.Errorf("failed append answered %v, want COORDINATOR_NOT_AVAILABLE", got)
	}
	if got := <-parked; got != kerr.CoordinatorNotAvailable.Code {
		t.Errorf("parked request answered %v", got)
	}
	if got := values(t, rt, 0); !slices.Equal(got, []string{"a"}) {
		t.Errorf("after the revert the state holds %v, want the log's [a]", got)
	}
	if got := put(t, rt, 0, "b"); got != "ok b" {
		t.Errorf("after the revert: %v", got)
	}
}

func TestFailedRevertKeepsState(t *testing.T) {
	rt, env := newTest(t, map[int32][]string{0: {"a"}})
	rt.Led(0, 0)
	start(t, rt)
	env.mu.Lock()
	env.logs[0] = append(env.logs[0], "bad") // the replay will fail
	env.mu.Unlock()
	env.fail(errAppend)
	put(t, rt, 0, "x")
	if got := values(t, rt, 0); !slices.Equal(got, []string{"a", "x"}) {
		t.Errorf("state %v, want the unreverted [a x]", got)
	}
}

func TestLedLoadsBeside(t *testing.T) {
	rt, env := newTest(t, map[int32][]string{0: {"a"}, 1: {"b"}})
	rt.Led(0, 3)
	start(t, rt)
	put(t, rt, 0, "x")
	rt.Led(1, 5)
	if got := values(t, rt, 1); !slices.Equal(got, []string{"b"}) {
		t.Errorf("partition 1 after Led: %v", got)
	}
	// Loaded beside: partition 0's state was not rebuilt.
	var loads [][]int32
	rt.Run(context.Background(), func(s *fakeState, _ int64) { loads = s.loads })
	if len(loads) != 2 || !slices.Equal(loads[1], []int32{1}) {
		t.Errorf("loads %v, want the start's, then partition 1 alone", loads)
	}
	if !slices.Equal(env.reads, []int32{0, 1}) {
		t.Errorf("reads %v", env.reads)
	}
}

func TestLostRebuilds(t *testing.T) {
	rt, _ := newTest(t, map[int32][]string{0: {"a"}, 1: {"b"}})
	rt.Led(0, 0)
	rt.Led(1, 0)
	start(t, rt)
	parked := make(chan any, 1)
	go func() {
		res, _ := rt.Call(context.Background(), func(s *fakeState, _ int64, id ID) { s.parked = append(s.parked, id) })
		parked <- res
	}()
	waitFor(t, func() bool {
		var n int
		rt.Run(context.Background(), func(s *fakeState, _ int64) { n = len(s.parked) })
		return n == 1
	})
	rt.Lost(1)
	if got := values(t, rt, 1); got != nil {
		t.Errorf("partition 1 still loaded after Lost: %v", got)
	}
	if got := <-parked; got != kerr.NotCoordinator.Code {
		t.Errorf("parked request answered %v, want NOT_COORDINATOR", got)
	}
	if got := values(t, rt, 0); !slices.Equal(got, []string{"a"}) {
		t.Errorf("partition 0 after the rebuild: %v", got)
	}
}

func TestLedAtNewEpochRebuilds(t *testing.T) {
	rt, env := newTest(t, map[int32][]string{0: {"a"}})
	rt.Led(0, 1)
	start(t, rt)
	put(t, rt, 0, "x")
	env.mu.Lock()
	env.logs[0] = []string{"a", "y"} // the log moved on elsewhere
	env.mu.Unlock()
	rt.Led(0, 1) // the same epoch: nothing to do
	if got := values(t, rt, 0); !slices.Equal(got, []string{"a", "x"}) {
		t.Errorf("same epoch reloaded: %v", got)
	}
	rt.Led(0, 2)
	if got := values(t, rt, 0); !slices.Equal(got, []string{"a", "y"}) {
		t.Errorf("new epoch: %v, want the log's [a y]", got)
	}
}

func TestFailedLeadershipLoadRetries(t *testing.T) {
	rt, env := newTest(t, map[int32][]string{0: {"a"}, 1: {"bad"}})
	rt.Led(0, 0)
	start(t, rt)
	rt.Led(1, 0)
	if got := values(t, rt, 1); got != nil {
		t.Errorf("partition 1 loaded by a failed load: %v", got)
	}
	env.mu.Lock()
	env.logs[1] = []string{"b"}
	env.mu.Unlock()
	if got := values(t, rt, 1); !slices.Equal(got, []string{"b"}) {
		t.Errorf("partition 1 after the retry: %v", got)
	}
	if got := values(t, rt, 0); !slices.Equal(got, []string{"a"}) {
		t.Errorf("partition 0 after the retry: %v", got)
	}
}

// TestServing checks what Serving says of a partition led and loaded, not
// led, and led but not loaded (its load failed, to be retried).
func TestServing(t *testing.T) {
	rt, env := newTest(t, map[int32][]string{0: {"a"}, 1: {"bad"}})
	rt.Led(0, 0)
	start(t, rt)
	rt.Led(1, 0)
	serving := func() (codes [3]int16) {
		t.Helper()
		if err := rt.Run(context.Background(), func(*fakeState, int64) {
			for p := range codes {
				codes[p] = rt.Serving(int32(p))
			}
		}); err != nil {
			t.Fatal(err)
		}
		return codes
	}
	loading, elsewhere := kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code
	if got := serving(); got != [3]int16{0, loading, elsewhere} {
		t.Errorf("with partition 1's load failing: %v", got)
	}
	env.mu.Lock()
	env.logs[1] = []string{"b"}
	env.mu.Unlock()
	if got := serving(); got != [3]int16{0, 0, elsewhere} {
		t.Errorf("once partition 1 is loaded: %v", got)
	}
	rt.Lost(0)
	if got := serving(); got != [3]int16{elsewhere, 0, elsewhere} {
		t.Errorf("after partition 0 is lost: %v", got)
	}
}

func TestAdopt(t *testing.T) {
	rt, env := newTest(t, map[int32][]string{})
	start(t, rt)
	rt.Run(context.Background(), func(*fakeState, int64) { rt.Adopt(map[int32]int32{0: 0, 1: 0}) })
	put(t, rt, 1, "x")
	if len(env.reads) != 0 {
		t.Errorf("adopted partitions were read: %v", env.reads)
	}
	if got := values(t, rt, 1); !slices.Equal(got, []string{"x"}) {
		t.Errorf("partition 1: %v", got)
	}
}

func TestTick(t *testing.T) {
	env := &fakeEnv{logs: map[int32][]string{}}
	rt := New(Config[*fakeState, rec]{Name: "__fake", New: newFakeState, Env: env, TickEvery: time.Millisecond,
		Fail: func(res any, _ int16) any { return res }, ErrorCode: func(error) int16 { return -1 },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	start(t, rt)
	waitFor(t, func() bool {
		var n int
		rt.Run(context.Background(), func(s *fakeState, _ int64) { n = s.ticks })
		return n >= 3
	})
}

func TestStopped(t *testing.T) {
	rt, _ := newTest(t, map[int32][]string{})
	if err := rt.Start(); err != nil {
		t.Fatal(err)
	}
	rt.Stop()
	if _, err := rt.Call(context.Background(), func(*fakeState, int64, ID) {}); !errors.Is(err, ErrStopped) {
		t.Errorf("Call after Stop: %v", err)
	}
	if err := rt.Run(context.Background(), func(*fakeState, int64) {}); !errors.Is(err, ErrStopped) {
		t.Errorf("Run after Stop: %v", err)
	}
	select {
	case <-rt.Context().Done():
	default:
		t.Error("the runtime's context not ended")
	}
}

// followState is a fakeState that, like a transaction coordinator, has
// work after its answers: each "chain" value asks for one more record
// once answered.
type followState struct {
	*fakeState
	chain    int
	settled  int
	rebuilds []string
}

func (s *followState) Answered() bool {
	if s.chain == 0 {
		return false
	}
	s.chain--
	s.records = append(s.records, rec{0, "next"})
	return true
}
func (s *followState) Settled() { s.settled++ }
func (s *followState) Rebuilt(reverted, ok bool) {
	s.rebuilds = append(s.rebuilds, map[bool]string{true: "revert", false: "leadership"}[reverted]+map[bool]string{true: " ok", false: " failed"}[ok])
}

func TestFollowerCyclesAndTimers(t *testing.T) {
	env := &fakeEnv{logs: map[int32][]string{}}
	var fired int
	rt := New(Config[*followState, rec]{Name: "__fake", New: func() *followState { return &followState{fakeState: newFakeState()} },
		Env: env, TickEvery: time.Hour, ReloadOnGain: true,
		Timers: []Timer[*followState]{{Every: time.Millisecond, Fire: func(*followState, int64) { fired++ }}},
		Fail:   func(_ any, code int16) any { return code }, ErrorCode: func(error) int16 { return kerr.NotCoordinator.Code },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	rt.Led(0, 0)
	if err := rt.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Stop)
	res, err := rt.Call(context.Background(), func(s *followState, _ int64, id ID) { s.put(id, 0, "x"); s.chain = 2 })
	if err != nil || res != "ok x" {
		t.Fatalf("answer %v, %v", res, err)
	}
	var settled int
	rt.Run(context.Background(), func(s *followState, _ int64) { settled = s.settled })
	env.mu.Lock()
	got := slices.Clone(env.logs[0])
	env.mu.Unlock()
	if !slices.Equal(got, []string{"x", "next", "next"}) {
		t.Errorf("log %v, want the answered record and the two it led to", got)
	}
	if settled == 0 {
		t.Error("Settled never called")
	}
	waitFor(t, func() bool {
		var n int
		rt.Run(context.Background(), func(*followState, int64) { n = fired })
		return n >= 2
	})
	// A gain rebuilds everything (ReloadOnGain), and a failed append
	// reverts: both are reported to the state kept.
	env.mu.Lock()
	env.logs[1] = []string{"b"}
	env.mu.Unlock()
	rt.Led(1, 0)
	env.fail(errAppend)
	if res, _ := rt.Call(context.Background(), func(s *followState, _ int64, id ID) { s.put(id, 1, "y") }); res != kerr.NotCoordinator.Code {
		t.Errorf("failed append answered %v", res)
	}
	var rebuilds []string
	var loads [][]int32
	rt.Run(context.Background(), func(s *followState, _ int64) { rebuilds, loads = s.rebuilds, s.loads })
	if !slices.Equal(rebuilds, []string{"revert ok"}) {
		t.Errorf("rebuilds seen by the state kept: %v", rebuilds)
	}
	if len(loads) != 1 || !slices.Equal(loads[0], []int32{0, 1}) {
		t.Errorf("loads of the reverted state %v, want both partitions at once", loads)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met")
		}
		time.Sleep(time.Millisecond)
	}
}
