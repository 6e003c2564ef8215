// Package runtime is the driver the broker's log-backed coordinators share
// (the group coordinator on __consumer_offsets, the transaction
// coordinator on __transaction_state; the share and streams group
// coordinators are meant to be its next users), after the shape of
// Kafka's CoordinatorRuntime: a coordinator's state machine is owned by
// one goroutine, which takes events from the handlers, gives the machine
// the time on a tick, appends the records the machine produced and only
// then hands out its answers, so that an acknowledged change is in the
// log.
//
// What it owns: the goroutine, the event queue, the ticker and further
// periodic timers (Config.Timers), the set of the
// topic's partitions that are loaded (with the leader epoch each was
// loaded at), the append-then-answer cycle, the answers still owed
// (Call's), and the revert: when an append fails, the answers of that
// cycle are failed with the code Config.ErrorCode maps the error to, every
// parked request is aborted with it, and the state is rebuilt from the log
// (if even that fails, the old state is kept, nothing better being known).
//
// Leadership is pushed in, not polled: the broker calls Led when it has
// applied a partition's leadership at an epoch, and Lost when the
// partition is no longer led here (on a single node, Led at epoch 0 for
// every partition of the topic when it exists or is created). Led and Lost
// only record what is wanted and never block; the goroutine applies the
// change before its next event or tick, so no event is served from a state
// that is not loaded. Partitions newly led are replayed beside the loaded
// ones (unless Config.ReloadOnGain); a partition lost, or led again at another epoch, rebuilds the
// whole state from the partitions led (parked requests answered
// NOT_COORDINATOR). A failed load is retried before the next event.
// Serving tells the coordinator, for one partition, what the runtime knows
// of it: led and loaded (0), not led (NOT_COORDINATOR), or led but not
// loaded at its epoch (COORDINATOR_LOAD_IN_PROGRESS), so that a state
// machine is given which of its keys it serves as an input of each call
// instead of asking the broker. After
// a successful load the goroutine runs one cycle, for what the load asked
// for (a transaction coordinator's pending markers); so it does when it
// starts.
//
// What a coordinator provides: a State (Replay a batch of one partition's
// log, Loaded when a load is done, Tick, Ready for its records and
// answers, Abort to answer its parked requests with an error; a Follower
// also acts once a cycle's answers are out, as a transaction coordinator
// writes its markers, and may ask for another cycle) and a constructor for
// a fresh one; Config.Fail turns an answer into its
// failed form. What the broker provides: an Env, which appends records to
// the topic and waits until they are durable, and reads a partition's log
// for replay.
//
// Goroutines and locks: every State and Env method, and every function
// given to Call, Submit and Run, runs on the runtime's goroutine, one at a
// time, so a State needs no lock. Each Timer has a goroutine of its own
// that only signals the runtime's; all end with Stop. Led and Lost take the runtime's one mutex,
// which guards only the wanted leadership and is never held while calling
// out; they may be called from any goroutine, before Start too. Adopt is
// for the Env alone, on the goroutine; Serving is for the goroutine too.
//
// Imports: kerr from franz-go for NOT_COORDINATOR and
// COORDINATOR_LOAD_IN_PROGRESS; nothing of this
// project.
package runtime
