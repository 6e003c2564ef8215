package runtime

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ID names one request's answer: Call hands it to its function, and the
// State returns the answer under it from Ready.
type ID uint64

// Reply is the answer to the request submitted under ID.
type Reply struct {
	ID     ID
	Result any
}

// State is a coordinator's state machine. The runtime calls it from its
// goroutine only.
type State[R any] interface {
	// Replay feeds one batch of partition p's log to the state; now is
	// when the load began.
	Replay(now int64, p int32, batch []byte) error
	// Loaded ends a load of partitions (all those led when the state is
	// fresh, else those just gained) that began at now.
	Loaded(now int64, partitions []int32)
	// Tick gives the state the time.
	Tick(now int64)
	// Ready returns, and forgets, the records to append and the answers
	// to hand out once they are durable.
	Ready() ([]R, []Reply)
	// Abort answers every parked request with code; the answers come
	// with the next Ready.
	Abort(code int16)
}

// Follower is a State with work of its own around the append-then-answer
// cycle, such as a transaction coordinator's markers.
type Follower interface {
	// Answered runs once a cycle's answers are out; true asks for
	// another cycle (Ready has more).
	Answered() bool
	// Settled ends every cycle, whether its append failed or not.
	Settled()
	// Rebuilt is told that the runtime rebuilt the state from the log,
	// after a failed append (reverted) or a leadership change; ok false
	// says that the rebuild failed and the old state is kept. It is
	// called on the state kept.
	Rebuilt(reverted, ok bool)
}

// Env is what the runtime needs of the broker, called on its goroutine.
type Env[R any] interface {
	// Append writes records to the topic and returns once they are as
	// durable as asked; stop is closed when the runtime stops.
	Append(records []R, stop <-chan struct{}) error
	// Read calls fn with each batch of partition p's log, from its start
	// to where a coordinator loads.
	Read(p int32, fn func(batch []byte) error) error
}

// Config parameterises a runtime.
type Config[S State[R], R any] struct {
	// Name is the topic, for the logs.
	Name string
	// New returns a fresh, empty state.
	New func() S
	Env Env[R]
	// TickEvery is how often the state is given the time.
	TickEvery time.Duration
	// Timers are further periodic events, each run on the goroutine and
	// followed by a cycle, as a tick is.
	Timers []Timer[S]
	// ReloadOnGain rebuilds the whole state when a partition is gained,
	// instead of loading it beside the loaded ones.
	ReloadOnGain bool
	// Fail turns an answer into its failed form with code.
	Fail func(result any, code int16) any
	// ErrorCode is the code a failed append's answers get.
	ErrorCode func(err error) int16
	Log       *slog.Logger
}

// Timer is a periodic event.
type Timer[S any] struct {
	Every time.Duration
	Fire  func(s S, now int64)
}

// ErrStopped is returned to callers once the runtime has stopped.
var ErrStopped = errors.New("coordinator runtime stopped")

type event[S any] struct {
	fn    func(s S, now int64, id ID)
	reply chan any
}

// Runtime drives one State from one goroutine.
type Runtime[S State[R], R any] struct {
	cfg    Config[S, R]
	events chan event[S]
	ctx    context.Context // ended when the runtime stops
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	want    map[int32]int32 // the partitions led here, with their epochs
	changed bool            // want differs from loaded, or a load failed

	// Owned by the goroutine (by Start before it runs).
	state   S
	loaded  map[int32]int32
	nextID  ID
	waiting map[ID]chan any
}

// New returns a runtime with nothing loaded; Start makes its state, loads
// and runs it.
func New[S State[R], R any](cfg Config[S, R]) *Runtime[S, R] {
	ctx, cancel := context.WithCancel(context.Background())
	return &Runtime[S, R]{
		cfg:     cfg,
		events:  make(chan event[S]),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		want:    map[int32]int32{},
		loaded:  map[int32]int32{},
		waiting: map[ID]chan any{},
	}
}

// Led says that this broker leads partition p at leader epoch epoch.
func (rt *Runtime[S, R]) Led(p, epoch int32) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if e, ok := rt.want[p]; !ok || e != epoch {
		rt.want[p] = epoch
		rt.changed = true
	}
}

// Lost says that this broker no longer leads partition p.
func (rt *Runtime[S, R]) Lost(p int32) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if _, ok := rt.want[p]; ok {
		delete(rt.want, p)
		rt.changed = true
	}
}

// Serving says whether partition p is served, for the coordinator to ask
// on the goroutine: 0 when p is led here and loaded at the epoch it is led
// at; NOT_COORDINATOR when it is not led here; COORDINATOR_LOAD_IN_PROGRESS
// when it is led but not yet loaded at that epoch (a load that failed and
// is retried, or a change Led made during the event), as Kafka's
// coordinators answer for a partition still loading.
func (rt *Runtime[S, R]) Serving(p int32) int16 {
	rt.mu.Lock()
	epoch, led := rt.want[p]
	rt.mu.Unlock()
	if !led {
		return kerr.NotCoordinator.Code
	}
	if e, loaded := rt.loaded[p]; !loaded || e != epoch {
		return kerr.CoordinatorLoadInProgress.Code
	}
	return 0
}

// Adopt marks partitions as led and loaded without replaying them: for the
// coordinator, on the goroutine (or in Start's load), when a single node
// creates its topic, whose partitions hold nothing yet, or first finds it
// after it started. A later revert replays them.
func (rt *Runtime[S, R]) Adopt(led map[int32]int32) {
	rt.mu.Lock()
	maps.Copy(rt.want, led)
	rt.mu.Unlock()
	maps.Copy(rt.loaded, led)
}

// Start loads the partitions led so far, synchronously, and starts the
// goroutine. A failed load is returned and nothing runs.
func (rt *Runtime[S, R]) Start() error {
	rt.mu.Lock()
	want := maps.Clone(rt.want)
	rt.changed = false
	rt.mu.Unlock()
	rt.state = rt.cfg.New()
	if err := rt.load(rt.state, want, nil); err != nil {
		return err
	}
	rt.loaded = want
	go rt.run()
	return nil
}

// Stop ends the goroutine; callers still waiting get ErrStopped.
func (rt *Runtime[S, R]) Stop() {
	rt.cancel()
	<-rt.done
}

// Context is ended when the runtime stops.
func (rt *Runtime[S, R]) Context() context.Context { return rt.ctx }

// Done is closed once the goroutine has ended.
func (rt *Runtime[S, R]) Done() <-chan struct{} { return rt.done }

// load replays the partitions of led (only those in only, if set) into s,
// in partition order, and ends the load.
func (rt *Runtime[S, R]) load(s S, led map[int32]int32, only map[int32]bool) error {
	now := time.Now().UnixMilli()
	var parts []int32
	for _, p := range slices.Sorted(maps.Keys(led)) {
		if only != nil && !only[p] {
			continue
		}
		if err := rt.cfg.Env.Read(p, func(b []byte) error { return s.Replay(now, p, b) }); err != nil {
			return err
		}
		parts = append(parts, p)
	}
	s.Loaded(now, parts)
	return nil
}

// syncLeadership applies the leadership Led and Lost asked for: see the
// package comment.
func (rt *Runtime[S, R]) syncLeadership() {
	rt.mu.Lock()
	if !rt.changed {
		rt.mu.Unlock()
		return
	}
	rt.changed = false
	led := maps.Clone(rt.want)
	rt.mu.Unlock()
	if maps.Equal(led, rt.loaded) {
		return
	}
	gained, lost := map[int32]bool{}, false
	for p, epoch := range led {
		if e, ok := rt.loaded[p]; !ok {
			gained[p] = true
		} else if e != epoch {
			lost = true // led again at a new epoch: its state may have moved on elsewhere
		}
	}
	for p := range rt.loaded {
		if _, ok := led[p]; !ok {
			lost = true
		}
	}
	if !lost && !rt.cfg.ReloadOnGain {
		err := rt.load(rt.state, led, gained)
		if err == nil {
			rt.loaded = led
			rt.flush()
			return
		}
		// Partly loaded: start over from nothing.
		rt.cfg.Log.Error("loading "+rt.cfg.Name+" after a leadership change failed; reloading every partition", "err", err)
	}
	old := rt.state
	old.Abort(kerr.NotCoordinator.Code)
	_, replies := old.Ready()
	rt.deliver(replies, 0)
	fresh := rt.cfg.New()
	if err := rt.load(fresh, led, nil); err != nil {
		rt.cfg.Log.Error("loading "+rt.cfg.Name+" after a leadership change failed; retrying", "err", err)
		rt.retryLoad()
		rt.rebuilt(false, false)
		return
	}
	rt.state, rt.loaded = fresh, led
	rt.rebuilt(false, true)
	rt.flush() // what the load asks for (a transaction coordinator's markers)
}

// rebuilt tells a Follower state of a rebuild.
func (rt *Runtime[S, R]) rebuilt(reverted, ok bool) {
	if f, isF := any(rt.state).(Follower); isF {
		f.Rebuilt(reverted, ok)
	}
}

// retryLoad has the next event or tick try the load again.
func (rt *Runtime[S, R]) retryLoad() {
	rt.mu.Lock()
	rt.changed = true
	rt.mu.Unlock()
}

func (rt *Runtime[S, R]) run() {
	defer close(rt.done)
	ticker := time.NewTicker(rt.cfg.TickEvery)
	defer ticker.Stop()
	fired := make(chan int)
	for i, t := range rt.cfg.Timers {
		go func() {
			tk := time.NewTicker(t.Every)
			defer tk.Stop()
			for {
				select {
				case <-tk.C:
					select {
					case fired <- i:
					case <-rt.ctx.Done():
						return
					}
				case <-rt.ctx.Done():
					return
				}
			}
		}()
	}
	rt.flush() // what the start's load asks for
	for {
		select {
		case ev := <-rt.events:
			rt.syncLeadership()
			rt.nextID++
			if ev.reply != nil {
				rt.waiting[rt.nextID] = ev.reply
			}
			ev.fn(rt.state, time.Now().UnixMilli(), rt.nextID)
		case <-ticker.C:
			rt.syncLeadership()
			rt.state.Tick(time.Now().UnixMilli())
		case i := <-fired:
			rt.syncLeadership()
			rt.cfg.Timers[i].Fire(rt.state, time.Now().UnixMilli())
		case <-rt.ctx.Done():
			return
		}
		rt.flush()
	}
}

// flush appends the state's records, then hands out its answers, for as
// many cycles as a Follower asks. If an append fails, the state's
// decisions do not stand: see revert.
func (rt *Runtime[S, R]) flush() {
	f, isF := any(rt.state).(Follower)
	if isF {
		defer func() { any(rt.state).(Follower).Settled() }()
	}
	for {
		records, replies := rt.state.Ready()
		if len(records) > 0 {
			if err := rt.cfg.Env.Append(records, rt.ctx.Done()); err != nil {
				rt.revert(replies, err)
				return
			}
		}
		rt.deliver(replies, 0)
		if !isF || !f.Answered() {
			return
		}
	}
}

// deliver hands out answers; a non-zero code fails each (Config.Fail).
func (rt *Runtime[S, R]) deliver(replies []Reply, code int16) {
	for _, r := range replies {
		ch, ok := rt.waiting[r.ID]
		if !ok {
			continue
		}
		delete(rt.waiting, r.ID)
		res := r.Result
		if code != 0 {
			res = rt.cfg.Fail(res, code)
		}
		ch <- res // buffered: the caller may have gone
	}
}

// revert handles a failed append: the answers of this cycle and every
// parked request are failed, and the state is rebuilt from the log. If
// even that fails, the old state is kept and the error logged.
func (rt *Runtime[S, R]) revert(replies []Reply, err error) {
	code := rt.cfg.ErrorCode(err)
	rt.cfg.Log.Error("appending to "+rt.cfg.Name+" failed; reverting the coordinator to the log", "err", err)
	rt.deliver(replies, code)
	old := rt.state
	old.Abort(code)
	_, parked := old.Ready()
	rt.deliver(parked, 0)
	fresh := rt.cfg.New()
	if rerr := rt.load(fresh, rt.loaded, nil); rerr != nil {
		rt.cfg.Log.Error("replaying "+rt.cfg.Name+" after a failed append failed; keeping the unreverted state", "err", rerr)
		rt.rebuilt(true, false)
		return
	}
	rt.state = fresh
	rt.rebuilt(true, true)
}

// Submit submits a request and returns the channel its answer will come
// on (buffered), once the goroutine has taken it. It fails if ctx ends or
// the runtime stops first.
func (rt *Runtime[S, R]) Submit(ctx context.Context, fn func(s S, now int64, id ID)) (<-chan any, error) {
	reply := make(chan any, 1)
	select {
	case rt.events <- event[S]{fn: fn, reply: reply}:
		return reply, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-rt.done:
		return nil, ErrStopped
	}
}

// Call submits a request and waits for its answer, which may be parked
// behind later events. It fails if ctx ends or the runtime stops first.
func (rt *Runtime[S, R]) Call(ctx context.Context, fn func(s S, now int64, id ID)) (any, error) {
	reply, err := rt.Submit(ctx, fn)
	if err != nil {
		return nil, err
	}
	select {
	case res := <-reply:
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-rt.done:
		return nil, ErrStopped
	}
}

// Run runs fn on the goroutine and waits for it (not for the append of
// what it did), for an event without an answer of its own. It fails if
// ctx ends or the runtime stops before fn starts.
func (rt *Runtime[S, R]) Run(ctx context.Context, fn func(s S, now int64)) error {
	done := make(chan struct{})
	ev := event[S]{fn: func(s S, now int64, _ ID) { fn(s, now); close(done) }}
	select {
	case rt.events <- ev:
	case <-ctx.Done():
		return ctx.Err()
	case <-rt.done:
		return ErrStopped
	}
	<-done
	return nil
}
