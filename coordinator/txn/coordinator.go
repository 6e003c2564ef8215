package txn

import (
	"fmt"
	"math"
	"regexp"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Config holds the broker settings the coordinator obeys, in Kafka's names
// and units.
type Config struct {
	// MaxTimeoutMs is transaction.max.timeout.ms (Kafka's default 900000):
	// an InitProducerId asking for a longer transaction timeout is
	// INVALID_TRANSACTION_TIMEOUT.
	MaxTimeoutMs int32
	// IDExpirationMs is transactional.id.expiration.ms (Kafka's default
	// 604800000, seven days): a transactional id with no transaction in
	// progress and no update for this long is removed (ExpireIDs).
	IDExpirationMs int64
	// TransactionVersion is the cluster's finalized transaction.version,
	// Kafka's server TV: the version of the aborts the coordinator starts
	// itself (fencing, timeouts). At 2 such an abort bumps the epoch once
	// more, as a transactions V2 EndTxn does.
	TransactionVersion int16
}

// Inputs are what a call needs of the world outside the coordinator,
// besides its request and the time: which transactional ids this
// coordinator serves, and where new producer ids come from. The driver
// gives them with each call that needs them, as coordinator/group is given
// its topic image, and the coordinator keeps neither; given the same
// inputs, a call makes the same decision.
type Inputs struct {
	// Serving says whether this coordinator serves transactional id id:
	// 0, or the error Kafka's TransactionStateManager.getTransactionState
	// answers for an id whose __transaction_state partition this broker
	// does not lead (NOT_COORDINATOR) or has not loaded yet
	// (COORDINATOR_LOAD_IN_PROGRESS); the broker asks its
	// coordinator/runtime. It is asked where Kafka asks, after the
	// request's own checks; timers, PendingMarkers and List pass over the
	// ids it refuses. Nil: every id is served (a single node).
	Serving func(id string) int16
	// NewProducerID hands out a producer id never used before, or a Kafka
	// error code when it cannot. InitProducerID, EndTxn (transactions V2,
	// at an exhausted epoch) and the fences of InitProducerID and
	// AbortTimedOut call it, only when they need a new producer id; they
	// panic if it is nil then.
	NewProducerID func() (int64, int16)
}

// serving is in.Serving, 0 when unset.
func (in Inputs) serving(id string) int16 {
	if in.Serving == nil {
		return 0
	}
	return in.Serving(id)
}

// newProducerID is in.NewProducerID, which must be set.
func (in Inputs) newProducerID() (int64, int16) {
	if in.NewProducerID == nil {
		panic("txn: a new producer id is needed and Inputs.NewProducerID is nil")
	}
	return in.NewProducerID()
}

// Defaults of Config, Kafka's.
const (
	DefaultMaxTimeoutMs   = 900000
	DefaultIDExpirationMs = 7 * 24 * 60 * 60 * 1000
)

// Coordinator is the transaction coordinator's state. It is not safe for
// concurrent use: one goroutine drives it.
type Coordinator struct {
	cfg     Config
	txns    map[string]*Txn
	records []Record
	markers []Marker
}

// Marker asks the driver to write a transaction marker with the
// producer's id and epoch into each of Partitions; TransactionVersion is
// the client's (0 or 1: the markers of transactions V1).
type Marker struct {
	TransactionalID    string
	ProducerID         int64
	ProducerEpoch      int16
	Commit             bool
	TransactionVersion int8
	Partitions         []Partition
}

// Effects are what the events since the last Ready asked the driver to do,
// in order: append Records (all of them, before any answer goes out), then
// write Markers.
type Effects struct {
	Records []Record
	Markers []Marker
}

// New returns an empty coordinator.
func New(cfg Config) *Coordinator {
	if cfg.MaxTimeoutMs <= 0 {
		cfg.MaxTimeoutMs = DefaultMaxTimeoutMs
	}
	if cfg.IDExpirationMs <= 0 {
		cfg.IDExpirationMs = DefaultIDExpirationMs
	}
	return &Coordinator{cfg: cfg, txns: map[string]*Txn{}}
}

// Ready returns and clears the effects of the events so far.
func (c *Coordinator) Ready() Effects {
	e := Effects{Records: c.records, Markers: c.markers}
	c.records, c.markers = nil, nil
	return e
}

func (c *Coordinator) persist(t *Txn) { c.records = append(c.records, record(t)) }

// InitResult answers InitProducerId.
type InitResult struct {
	ErrorCode     int16
	ProducerID    int64
	ProducerEpoch int16
}

func initError(e *kerr.Error) InitResult {
	return InitResult{ErrorCode: e.Code, ProducerID: -1, ProducerEpoch: -1}
}

// InitProducerID is Kafka's TransactionCoordinator.handleInitProducerId
// for a non-null transactional id: a new producer id for an unknown id,
// else the epoch bumped (fencing the previous producer), or a new producer
// id when the epoch is exhausted. expectedPID and expectedEpoch are the
// KIP-360 fields (-1 and -1: none). An ongoing transaction is aborted
// first, with the epoch bumped (PrepareEpochFence), and the answer is
// CONCURRENT_TRANSACTIONS so that the client retries once the abort is
// complete and gets the epoch bumped once more. PRODUCER_FENCED is
// returned as is: the handler maps it for old versions. in says whether id
// is served and gives the new producer id when one is needed (a new id, a
// rotation, or the fence at the last epoch).
func (c *Coordinator) InitProducerID(now int64, id string, timeoutMs int32, expectedPID int64, expectedEpoch int16, in Inputs) InitResult {
	switch {
	case id == "":
		return initError(kerr.InvalidRequest)
	case timeoutMs <= 0 || timeoutMs > c.cfg.MaxTimeoutMs:
		return initError(kerr.InvalidTransactionTimeout)
	}
	if code := in.serving(id); code != 0 {
		return InitResult{ErrorCode: code, ProducerID: -1, ProducerEpoch: -1}
	}
	hasExpected := expectedPID != noProducerID
	t := c.txns[id]
	created := false
	if t == nil {
		pid, code := in.newProducerID()
		if code != 0 {
			return InitResult{ErrorCode: code, ProducerID: -1, ProducerEpoch: -1}
		}
		t = &Txn{ID: id, ProducerID: pid, PreviousProducerID: noProducerID, NextProducerID: noProducerID,
			ProducerEpoch: noProducerEpoch, LastProducerEpoch: noProducerEpoch, TimeoutMs: timeoutMs, State: Empty,
			Partitions: map[Partition]struct{}{}, StartMs: -1, LastUpdateMs: now}
		created = true
	}
	// isValidProducerId: a KIP-360 request for another producer id is
	// fenced, unless the metadata was just created, or it names the
	// previous producer id with an exhausted epoch (a retry after a
	// rotation whose answer was lost).
	if hasExpected && !(t.ProducerEpoch == noProducerEpoch || expectedPID == t.ProducerID ||
		expectedPID == t.PreviousProducerID && epochExhausted(expectedEpoch)) {
		return initError(kerr.ProducerFenced)
	}
	switch t.State {
	case PrepareCommit, PrepareAbort:
		return initError(kerr.ConcurrentTransactions)
	case Ongoing:
		// prepareFenceProducerEpoch, then endTransaction(ABORT) with the
		// bumped epoch, not from the client.
		if code := c.fence(now, t, in); code != 0 {
			return InitResult{ErrorCode: code, ProducerID: -1, ProducerEpoch: -1}
		}
		return initError(kerr.ConcurrentTransactions)
	case Empty, CompleteCommit, CompleteAbort:
	default:
		return initError(kerr.UnknownServerError)
	}
	next := t.clone()
	switch {
	case epochExhausted(t.ProducerEpoch) && (!hasExpected || expectedEpoch == t.ProducerEpoch):
		// prepareProducerIdRotation
		pid, code := in.newProducerID()
		if code != 0 {
			return InitResult{ErrorCode: code, ProducerID: -1, ProducerEpoch: -1}
		}
		next.ProducerID, next.ProducerEpoch, next.LastProducerEpoch = pid, 0, noProducerEpoch
		if hasExpected {
			next.LastProducerEpoch = t.ProducerEpoch
		}
	case epochExhausted(t.ProducerEpoch):
		// Kafka's prepareIncrementProducerEpoch refuses to bump an
		// exhausted epoch; the request names another epoch, so it comes
		// from a fenced producer.
		return initError(kerr.ProducerFenced)
	case !hasExpected:
		next.ProducerEpoch, next.LastProducerEpoch = t.ProducerEpoch+1, noProducerEpoch
	case t.ProducerEpoch == noProducerEpoch || expectedEpoch == t.ProducerEpoch:
		next.ProducerEpoch, next.LastProducerEpoch = t.ProducerEpoch+1, t.ProducerEpoch
	case expectedEpoch == t.LastProducerEpoch:
		// A retry of the bump that made the current epoch: the same answer.
	default:
		return initError(kerr.ProducerFenced)
	}
	// prepareTransitionTo records the producer id being replaced as the
	// previous one.
	next.PreviousProducerID = t.ProducerID
	next.NextProducerID = noProducerID
	// The transaction version stays the last transaction's, as Kafka 4.2's
	// transitions keep it unless they set it.
	next.TimeoutMs, next.State, next.StartMs, next.LastUpdateMs = timeoutMs, Empty, -1, now
	next.Partitions = map[Partition]struct{}{}
	if created {
		c.txns[id] = &next
	} else {
		*t = next
	}
	c.persist(&next)
	return InitResult{ProducerID: next.ProducerID, ProducerEpoch: next.ProducerEpoch}
}

// checkProducer is the common start of AddPartitions and EndTxn.
func (c *Coordinator) checkProducer(id string, pid int64, in Inputs) (*Txn, *kerr.Error) {
	if id == "" {
		return nil, kerr.InvalidRequest
	}
	if code := in.serving(id); code != 0 {
		return nil, kerr.ErrorForCode(code).(*kerr.Error)
	}
	t := c.txns[id]
	if t == nil || t.ProducerID != pid {
		return nil, kerr.InvalidProducerIDMapping
	}
	return t, nil
}

// AddPartitions is Kafka's handleAddPartitionsToTransaction (for
// AddPartitionsToTxn, AddOffsetsToTxn, and a transactions V2 produce that
// adds its partition implicitly): the partitions join the producer's
// transaction, which begins (Ongoing) if none was. tv is the caller's
// transaction version, which the transaction takes (Kafka's
// prepareAddPartitions): 2 for AddPartitionsToTxn v4+ and produce v12+, 0
// otherwise. The caller has checked that the partitions exist. Of in, only
// Serving is asked.
func (c *Coordinator) AddPartitions(now int64, id string, pid int64, epoch int16, parts []Partition, tv int16, in Inputs) int16 {
	t, err := c.checkProducer(id, pid, in)
	switch {
	case err != nil:
		return err.Code
	case t.ProducerEpoch != epoch:
		return kerr.ProducerFenced.Code
	case t.State == PrepareCommit || t.State == PrepareAbort:
		return kerr.ConcurrentTransactions.Code
	}
	if t.State == Ongoing {
		added := false
		for _, p := range parts {
			if _, ok := t.Partitions[p]; !ok {
				added = true
			}
		}
		if !added {
			return 0
		}
	}
	if t.State != Ongoing {
		t.StartMs = now
	}
	for _, p := range parts {
		t.Partitions[p] = struct{}{}
	}
	t.State, t.LastUpdateMs, t.ClientTxnVersion = Ongoing, now, tv
	c.persist(t)
	return 0
}

// VerifyPartitions is Kafka's handleVerifyPartitionsInTransaction (the
// verifyOnly form of AddPartitionsToTxn that a partition leader sends
// before it appends a transactional batch, KIP-890 part 1): an error for
// the whole transaction, else TRANSACTION_ABORTABLE for each partition not
// in it. Nothing changes. Of in, only Serving is asked.
func (c *Coordinator) VerifyPartitions(id string, pid int64, epoch int16, parts []Partition, in Inputs) (int16, map[Partition]int16) {
	if id == "" {
		return kerr.InvalidRequest.Code, nil
	}
	if code := in.serving(id); code != 0 {
		return code, nil
	}
	t := c.txns[id]
	switch {
	case t == nil || t.ProducerID != pid:
		return kerr.InvalidProducerIDMapping.Code, nil
	case t.ProducerEpoch != epoch:
		return kerr.ProducerFenced.Code, nil
	case t.State == PrepareCommit || t.State == PrepareAbort:
		return kerr.ConcurrentTransactions.Code, nil
	}
	out := make(map[Partition]int16, len(parts))
	for _, p := range parts {
		if _, ok := t.Partitions[p]; ok {
			out[p] = 0
		} else {
			out[p] = kerr.TransactionAbortable.Code
		}
	}
	return 0, out
}

// EndResult answers EndTxn.
type EndResult struct {
	ErrorCode     int16
	ProducerID    int64
	ProducerEpoch int16
}

func endError(e *kerr.Error) EndResult {
	return EndResult{ErrorCode: e.Code, ProducerID: -1, ProducerEpoch: -1}
}

// EndTxn is Kafka's handleEndTransaction from a client: commit or abort
// the ongoing transaction. tv is the client's transaction version (2 for
// EndTxn v5+, 0 below), which picks Kafka's endTransactionWithTV1 or its
// version 2 twin. The answer is given once PrepareCommit or PrepareAbort is
// appended; the markers follow (Ready), then the completion
// (MarkersWritten).
//
// Version 1: the epoch must be the transaction's. Ending a transaction
// that has just ended the same way succeeds (a retry); the other way, or
// with no transaction, is INVALID_TXN_STATE; while the markers of the same
// result are being written, CONCURRENT_TRANSACTIONS.
//
// Version 2 (KIP-890 part 2): every end bumps the producer epoch, and the
// answer carries the producer id and epoch the client goes on with; an
// exhausted epoch moves to a new producer id at completion. A retry comes
// with the epoch before the bump (or the last epoch of the previous
// producer id after a rotation) and is answered NONE once the end is
// complete, CONCURRENT_TRANSACTIONS before. An abort with the current epoch
// and no transaction ongoing (Empty, CompleteCommit, CompleteAbort) is an
// empty transaction: it bumps the epoch too, as Kafka's table says.
//
// in says whether id is served and gives the producer id a version 2 end
// at an exhausted epoch moves to.
func (c *Coordinator) EndTxn(now int64, id string, pid int64, epoch int16, commit bool, tv int16, in Inputs) EndResult {
	if tv < 2 {
		return c.endTxnV1(now, id, pid, epoch, commit, in)
	}
	if id == "" {
		return endError(kerr.InvalidRequest)
	}
	if code := in.serving(id); code != 0 {
		return EndResult{ErrorCode: code, ProducerID: -1, ProducerEpoch: -1}
	}
	t := c.txns[id]
	if t == nil {
		return endError(kerr.InvalidProducerIDMapping)
	}
	retryOnOverflow := t.PreviousProducerID == pid && epoch == math.MaxInt16-1 && t.ProducerEpoch == 0
	retryOnEpochBump := t.ProducerEpoch == epoch+1
	isRetry := retryOnEpochBump || retryOnOverflow
	validEpoch := epoch == t.ProducerEpoch
	switch t.State {
	case PrepareCommit, PrepareAbort:
		validEpoch = retryOnEpochBump
	case CompleteCommit, CompleteAbort:
		validEpoch = isRetry || epoch == t.ProducerEpoch
	}
	switch {
	case t.ProducerID != pid && !retryOnOverflow:
		return endError(kerr.InvalidProducerIDMapping)
	case !validEpoch:
		return endError(kerr.ProducerFenced)
	}
	prepare := func(commit, empty bool) EndResult {
		next := int64(noProducerID)
		if epochExhausted(t.ProducerEpoch) {
			var code int16
			if next, code = in.newProducerID(); code != 0 {
				return EndResult{ErrorCode: code, ProducerID: -1, ProducerEpoch: -1}
			}
		}
		if empty {
			t.StartMs = now
		}
		c.prepareEnd(now, t, commit, tv, next)
		return EndResult{ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch}
	}
	done := EndResult{ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch}
	switch t.State {
	case Ongoing:
		return prepare(commit, false)
	case CompleteCommit:
		switch {
		case commit && isRetry:
			return done
		case !commit && !isRetry:
			return prepare(false, true)
		}
	case CompleteAbort:
		switch {
		case !commit && isRetry:
			return done
		case !commit:
			return prepare(false, true)
		}
	case Empty:
		if !commit {
			return prepare(false, true)
		}
	case PrepareCommit, PrepareAbort:
		if (t.State == PrepareCommit) == commit {
			return endError(kerr.ConcurrentTransactions)
		}
	}
	return endError(kerr.InvalidTxnState)
}

// endTxnV1 is Kafka's endTransactionWithTV1 from a client.
func (c *Coordinator) endTxnV1(now int64, id string, pid int64, epoch int16, commit bool, in Inputs) EndResult {
	if id == "" {
		return endError(kerr.InvalidRequest)
	}
	if code := in.serving(id); code != 0 {
		return EndResult{ErrorCode: code, ProducerID: -1, ProducerEpoch: -1}
	}
	t := c.txns[id]
	switch {
	case t == nil || t.ProducerID != pid:
		return endError(kerr.InvalidProducerIDMapping)
	case epoch != t.ProducerEpoch:
		return endError(kerr.ProducerFenced)
	}
	switch t.State {
	case Ongoing:
		c.prepareEnd(now, t, commit, 0, noProducerID)
		return EndResult{ProducerID: -1, ProducerEpoch: -1}
	case CompleteCommit, CompleteAbort:
		if (t.State == CompleteCommit) == commit {
			return EndResult{ProducerID: -1, ProducerEpoch: -1}
		}
	case PrepareCommit, PrepareAbort:
		if (t.State == PrepareCommit) == commit {
			return endError(kerr.ConcurrentTransactions)
		}
	}
	return endError(kerr.InvalidTxnState)
}

// fence aborts t's ongoing transaction with the producer epoch bumped, so
// that its producer is fenced: Kafka's prepareFenceProducerEpoch, then
// endTransaction(ABORT) not from the client, at the server's transaction
// version (which, at 2, bumps the epoch once more). Where Kafka would fail
// for want of an epoch for the second bump, the abort takes the last epoch
// and moves to a new producer id at completion, as a V2 end with an
// exhausted epoch does.
func (c *Coordinator) fence(now int64, t *Txn, in Inputs) int16 {
	tv := c.cfg.TransactionVersion
	switch {
	case t.ProducerEpoch == math.MaxInt16:
		// Kafka: IllegalStateException. Never reached from the log Gregor
		// writes: every path moves to a new producer id before this.
		return kerr.UnknownServerError.Code
	case tv >= 2 && t.ProducerEpoch == math.MaxInt16-1:
		next, code := in.newProducerID()
		if code != 0 {
			return code
		}
		c.prepareEnd(now, t, false, 2, next)
		return 0
	}
	t.ProducerEpoch++
	t.LastProducerEpoch = noProducerEpoch
	c.prepareEnd(now, t, false, tv, noProducerID)
	return 0
}

// prepareEnd moves an Ongoing transaction to PrepareCommit or PrepareAbort
// (Kafka's prepareAbortOrCommit) and asks for its markers. At transaction
// version 2 the epoch is bumped and next, if not -1, is the producer id the
// transaction moves to at completion.
func (c *Coordinator) prepareEnd(now int64, t *Txn, commit bool, tv int16, next int64) {
	if tv >= 2 {
		t.LastProducerEpoch = t.ProducerEpoch
		t.ProducerEpoch++
		t.NextProducerID = next
	}
	t.State, t.LastUpdateMs, t.ClientTxnVersion = PrepareAbort, now, tv
	if commit {
		t.State = PrepareCommit
	}
	c.persist(t)
	c.askMarkers(t)
}

func (c *Coordinator) askMarkers(t *Txn) {
	c.markers = append(c.markers, Marker{TransactionalID: t.ID, ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch,
		Commit: t.State == PrepareCommit, TransactionVersion: int8(t.ClientTxnVersion), Partitions: t.SortedPartitions()})
}

// MarkersWritten reports that the markers of id's transaction (producer
// pid, epoch epoch) are written in done, or that done need none (their
// topic is gone). When no partition is left, the transaction completes:
// CompleteCommit or CompleteAbort is appended. A report about another
// transaction than the one preparing is ignored.
func (c *Coordinator) MarkersWritten(now int64, id string, pid int64, epoch int16, done []Partition) {
	t := c.txns[id]
	if t == nil || t.ProducerID != pid || t.ProducerEpoch != epoch || (t.State != PrepareCommit && t.State != PrepareAbort) {
		return
	}
	for _, p := range done {
		delete(t.Partitions, p)
	}
	if len(t.Partitions) > 0 {
		return
	}
	// prepareComplete: a V2 transaction whose epoch is exhausted moves to
	// its next producer id, with epoch 0.
	if t.State == PrepareCommit {
		t.State = CompleteCommit
	} else {
		t.State = CompleteAbort
	}
	if t.ClientTxnVersion >= 2 {
		t.PreviousProducerID, t.LastProducerEpoch = t.ProducerID, t.ProducerEpoch
		if t.NextProducerID != noProducerID {
			t.ProducerID, t.ProducerEpoch = t.NextProducerID, 0
		}
		t.NextProducerID = noProducerID
	}
	t.LastUpdateMs = now
	c.persist(t)
}

// PendingMarkers asks again for the markers of every transaction in
// PrepareCommit or PrepareAbort: after loading, and to retry markers that
// could not be written. Ids in refuses are passed over.
func (c *Coordinator) PendingMarkers(in Inputs) {
	for _, id := range c.sortedIDs() {
		if t := c.txns[id]; (t.State == PrepareCommit || t.State == PrepareAbort) && in.serving(id) == 0 {
			c.askMarkers(t)
		}
	}
}

func (c *Coordinator) sortedIDs() []string {
	ids := make([]string, 0, len(c.txns))
	for id := range c.txns {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// AbortTimedOut is Kafka's abortTimedOutTransactions: every Ongoing
// transaction begun more than its timeout before now is aborted with the
// producer epoch bumped (PrepareEpochFence), so the producer, if it is
// still there, is fenced. Ids in refuses are passed over; a fence at the
// last epoch takes a new producer id from in.
func (c *Coordinator) AbortTimedOut(now int64, in Inputs) []string {
	var aborted []string
	for _, id := range c.sortedIDs() {
		t := c.txns[id]
		if in.serving(id) != 0 {
			continue
		}
		if t.State == Ongoing && t.StartMs+int64(t.TimeoutMs) < now && c.fence(now, t, in) == 0 {
			aborted = append(aborted, id)
		}
	}
	return aborted
}

// ExpireIDs is Kafka's removeExpiredTransactionalIds: a transactional id
// in Empty, CompleteCommit or CompleteAbort not updated for
// transactional.id.expiration.ms is removed, with a tombstone. Ids in
// refuses are passed over.
func (c *Coordinator) ExpireIDs(now int64, in Inputs) []string {
	var expired []string
	for _, id := range c.sortedIDs() {
		t := c.txns[id]
		if in.serving(id) != 0 {
			continue
		}
		if t.State.expirationAllowed() && t.LastUpdateMs <= now-c.cfg.IDExpirationMs {
			delete(c.txns, id)
			c.records = append(c.records, tombstone(id))
			expired = append(expired, id)
		}
	}
	return expired
}

// Load applies one record of __transaction_state, replayed in log order
// at start-up. A tombstone removes the id. It has no effects; call
// PendingMarkers when every record is loaded.
func (c *Coordinator) Load(key, value []byte) error {
	id, err := decodeKey(key)
	if err != nil {
		return err
	}
	if value == nil {
		delete(c.txns, id)
		return nil
	}
	t, err := decodeValue(id, value)
	if err != nil {
		return err
	}
	c.txns[id] = t
	return nil
}

// Describe is Kafka's handleDescribeTransactions for one id: a copy of
// its metadata, or TRANSACTIONAL_ID_NOT_FOUND (INVALID_REQUEST for ""),
// or in's refusal.
func (c *Coordinator) Describe(id string, in Inputs) (Txn, int16) {
	if id == "" {
		return Txn{}, kerr.InvalidRequest.Code
	}
	if code := in.serving(id); code != 0 {
		return Txn{}, code
	}
	t := c.txns[id]
	if t == nil || t.State == Dead {
		return Txn{}, kerr.TransactionalIDNotFound.Code
	}
	return t.clone(), 0
}

// ListFilter is ListTransactions' filters: empty lists and a nil Pattern
// filter nothing, nor does a negative DurationMs.
type ListFilter struct {
	States      []string
	ProducerIDs []int64
	// DurationMs, if not negative, keeps transactions begun more than
	// DurationMs before now (v1).
	DurationMs int64
	// Pattern, if not nil, keeps transactional ids it matches whole (v2).
	Pattern *regexp.Regexp
}

// Listed is one transaction in ListTransactions' answer.
type Listed struct {
	ID         string
	ProducerID int64
	State      State
}

// List is Kafka's listTransactionStates: the transactions passing every
// filter, by transactional id, and the state names it does not know. Ids
// in refuses are not listed, so that ListTransactions, which admin clients
// send to every broker, lists each id once.
func (c *Coordinator) List(now int64, f ListFilter, in Inputs) (out []Listed, unknownStates []string) {
	states := map[State]bool{}
	for _, n := range f.States {
		if s, ok := StateByName(n); ok {
			states[s] = true
		} else {
			unknownStates = append(unknownStates, n)
		}
	}
	pids := map[int64]bool{}
	for _, p := range f.ProducerIDs {
		pids[p] = true
	}
	for _, id := range c.sortedIDs() {
		t := c.txns[id]
		switch {
		case t.State == Dead, in.serving(id) != 0,
			len(f.ProducerIDs) > 0 && !pids[t.ProducerID],
			len(f.States) > 0 && !states[t.State],
			f.DurationMs >= 0 && now-t.StartMs <= f.DurationMs,
			f.Pattern != nil && !f.Pattern.MatchString(id):
			continue
		}
		out = append(out, Listed{ID: id, ProducerID: t.ProducerID, State: t.State})
	}
	return out, unknownStates
}

// Len is how many transactional ids the coordinator holds.
func (c *Coordinator) Len() int { return len(c.txns) }

// String describes t for logs.
func (t *Txn) String() string {
	return fmt.Sprintf("%s(pid %d epoch %d %s, %d partitions)", t.ID, t.ProducerID, t.ProducerEpoch, t.State, len(t.Partitions))
}
