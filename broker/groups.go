package broker

// The group coordinator's driver. One goroutine owns the
// coordinator/group state machine: handlers send it events through a
// channel and wait for their answer; a ticker feeds it time. After each
// event it appends the records the coordinator produced to
// __consumer_offsets, then hands out the answers, so an acknowledged offset
// commit is in the log. A JoinGroup or SyncGroup that the coordinator parks
// leaves its handler waiting on its own answer channel; the goroutine moves
// on, so a parked request holds only its own connection (whose later
// requests wait behind it, as in Kafka).
//
// On start, before the listener opens, __consumer_offsets is created if it
// is missing and replayed from its start to rebuild groups and offsets, so
// COORDINATOR_LOAD_IN_PROGRESS is never needed.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gregor-broker/gregor/coordinator/group"
	"github.com/gregor-broker/gregor/protocol/batch"
)

// offsetsTopic is Kafka's internal topic of committed offsets and group
// metadata.
const offsetsTopic = "__consumer_offsets"

// groupTickInterval is how often the coordinator is given the time, which
// bounds how late a session or rebalance timeout fires.
const groupTickInterval = 20 * time.Millisecond

// groupCoordinator drives a group.Coordinator from one goroutine.
type groupCoordinator struct {
	b      *Broker
	events chan groupEvent
	cancel context.CancelFunc
	done   chan struct{}

	// Owned by the run goroutine.
	coordCfg group.Config
	coord    *group.Coordinator
	parts    []*partition
	nextID   group.ReplyID
	waiting  map[group.ReplyID]chan any
}

// groupEvent is one step for the coordinator. reply, if set, receives the
// answer to the request fn submits under the id it is given.
type groupEvent struct {
	fn    func(c *group.Coordinator, now int64, id group.ReplyID)
	reply chan any
}

func nowMillis() int64 { return time.Now().UnixMilli() }

// startGroups replays __consumer_offsets, if it exists, and starts the
// coordinator's goroutine. The topic itself is created on first use, when
// the coordinator first has records to write, as Kafka creates it on the
// first FindCoordinator.
func (b *Broker) startGroups() error {
	gc := &groupCoordinator{
		b:       b,
		events:  make(chan groupEvent),
		done:    make(chan struct{}),
		waiting: map[group.ReplyID]chan any{},
		coordCfg: group.Config{
			InitialRebalanceDelayMs:     *b.cfg.GroupInitialRebalanceDelayMs,
			MinSessionTimeoutMs:         b.cfg.GroupMinSessionTimeoutMs,
			MaxSessionTimeoutMs:         b.cfg.GroupMaxSessionTimeoutMs,
			MaxSize:                     b.cfg.GroupMaxSize,
			OffsetsRetentionMs:          b.cfg.OffsetsRetentionMinutes * 60 * 1000,
			NewMemberID:                 newMemberID,
			ConsumerSessionTimeoutMs:    b.cfg.GroupConsumerSessionTimeoutMs,
			ConsumerHeartbeatIntervalMs: b.cfg.GroupConsumerHeartbeatIntervalMs,
			ConsumerMaxSize:             b.cfg.GroupConsumerMaxSize,
			ConsumerAssignors:           b.cfg.GroupConsumerAssignors,
		},
	}
	gc.coord = group.New(gc.coordCfg)
	if t := b.lookupTopic(offsetsTopic); t != nil {
		gc.parts = b.partitions(t)
		if err := gc.replay(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	gc.cancel = cancel
	b.groups = gc
	go gc.run(ctx)
	return nil
}

// newMemberID is Kafka's member id: the client id, a dash and a random UUID.
func newMemberID(clientID string) string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	return clientID + "-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// replay feeds every record of __consumer_offsets to the coordinator.
func (gc *groupCoordinator) replay() error {
	now := nowMillis()
	var scratch batch.Scratch
	loaded := 0
	for _, p := range gc.parts {
		for off := p.log.StartOffset(); off < p.highWatermark(); {
			data, err := p.log.Read(off, 1<<20, p.highWatermark())
			if err != nil {
				return fmt.Errorf("broker: replaying %s-%d: %w", offsetsTopic, p.index, err)
			}
			if len(data) == 0 {
				break
			}
			err = batch.Split(data, func(one []byte) error {
				if h, err := batch.ParseHeader(one); err == nil && h.Control() {
					// A transaction marker (WriteTxnMarkers): no offsets of
					// its own.
					off = max(off, h.BaseOffset+int64(h.LastOffsetDelta)+1)
					return nil
				}
				var loadErr error
				if err := batch.ForEachRecord(one, &scratch, func(h *batch.Header, r *batch.Record) bool {
					off = h.BaseOffset + int64(r.OffsetDelta) + 1
					var value []byte
					if r.Value != nil {
						value = append([]byte(nil), r.Value...)
					}
					err := gc.coord.Load(now, append([]byte(nil), r.Key...), value)
					switch {
					case errors.Is(err, group.ErrBadRecord):
						// Not a record Gregor writes (a client produced
						// to the topic, or a share or streams group
						// record): skipped.
						gc.b.log.Warn("skipping a record of "+offsetsTopic, "partition", p.index, "err", err)
					case err != nil:
						loadErr = err
						return false
					default:
						loaded++
					}
					return true
				}); err != nil {
					return err
				}
				if h, err := batch.ParseHeader(one); err == nil {
					off = max(off, h.BaseOffset+int64(h.LastOffsetDelta)+1)
				}
				return loadErr
			})
			if err != nil {
				return fmt.Errorf("broker: replaying %s-%d: %w", offsetsTopic, p.index, err)
			}
		}
	}
	gc.coord.LoadDone(now)
	gc.coord.Ready() // loading has no effects to act on
	gc.b.log.Info("group coordinator loaded", "records", loaded)
	return nil
}

func (gc *groupCoordinator) run(ctx context.Context) {
	defer close(gc.done)
	ticker := time.NewTicker(groupTickInterval)
	defer ticker.Stop()
	for {
		select {
		case ev := <-gc.events:
			gc.nextID++
			if ev.reply != nil {
				gc.waiting[gc.nextID] = ev.reply
			}
			ev.fn(gc.coord, nowMillis(), gc.nextID)
		case <-ticker.C:
			gc.coord.Tick(nowMillis())
		case <-ctx.Done():
			return
		}
		gc.flush()
	}
}

// flush appends the coordinator's records, then delivers its answers. If
// the append fails, the coordinator's decisions do not stand: see revert.
func (gc *groupCoordinator) flush() {
	eff := gc.coord.Ready()
	if len(eff.Records) > 0 {
		if err := gc.appendRecords(eff.Records); err != nil {
			gc.revert(eff.Replies, err)
			return
		}
	}
	gc.deliver(eff.Replies, 0)
}

// deliver hands out answers; a non-zero code fails each (group.Fail).
func (gc *groupCoordinator) deliver(replies []group.Reply, code int16) {
	for _, r := range replies {
		ch, ok := gc.waiting[r.ID]
		if !ok {
			continue
		}
		delete(gc.waiting, r.ID)
		res := r.Result
		if code != 0 {
			res = group.Fail(res, code)
		}
		ch <- res // buffered: the handler may have gone
	}
}

// errOffsetsTopic marks a failure to create __consumer_offsets.
var errOffsetsTopic = errors.New("broker: " + offsetsTopic + " cannot be created")

// appendErrorCode is the error the group coordinator answers when its
// records could not be written, as Kafka's GroupCoordinatorService maps a
// failed append: no offsets topic (UNKNOWN_TOPIC_OR_PARTITION there) is
// COORDINATOR_NOT_AVAILABLE, a storage error (KAFKA_STORAGE_ERROR) is
// NOT_COORDINATOR, so clients look the coordinator up again and retry.
func appendErrorCode(err error) int16 {
	if errors.Is(err, errOffsetsTopic) {
		return kerr.CoordinatorNotAvailable.Code
	}
	return kerr.NotCoordinator.Code
}

// revert handles a failed append as Kafka's CoordinatorRuntime does: the
// in-memory state goes back to what the log holds. The answers of this
// batch and every parked request are failed, and the coordinator is
// rebuilt by replaying __consumer_offsets. If even the replay fails, the
// old coordinator is kept (nothing better is known) and the error logged.
func (gc *groupCoordinator) revert(replies []group.Reply, err error) {
	code := appendErrorCode(err)
	gc.b.log.Error("appending to "+offsetsTopic+" failed; reverting the group coordinator to the log", "err", err)
	gc.deliver(replies, code)
	old := gc.coord
	old.AbortParked(code)
	gc.deliver(old.Ready().Replies, 0)
	gc.coord = group.New(gc.coordCfg)
	if rerr := gc.replay(); rerr != nil {
		gc.b.log.Error("replaying "+offsetsTopic+" after a failed append failed; keeping the unreverted state", "err", rerr)
		gc.coord = old
	}
}

// createOffsetsTopic creates __consumer_offsets with
// offsets.topic.num.partitions partitions, compacted, with Kafka's
// offsets.topic.segment.bytes (100 MiB).
func (gc *groupCoordinator) createOffsetsTopic() error {
	t, kErr, msg := gc.b.createTopic(topicCreation{
		name:              offsetsTopic,
		partitions:        gc.b.cfg.OffsetsTopicPartitions,
		replicationFactor: 1,
		configs:           topicConfigs{"cleanup.policy": "compact", "segment.bytes": "104857600"},
	})
	if errors.Is(kErr, kerr.TopicAlreadyExists) {
		t, kErr = gc.b.lookupTopic(offsetsTopic), nil
	}
	if kErr != nil || t == nil {
		return fmt.Errorf("broker: creating %s: %v: %s", offsetsTopic, kErr, msg)
	}
	gc.parts = gc.b.partitions(t)
	return nil
}

// appendRecords writes records as one v2 batch per partition.
func (gc *groupCoordinator) appendRecords(recs []group.Record) error {
	if gc.parts == nil {
		if err := gc.createOffsetsTopic(); err != nil {
			return fmt.Errorf("%w: %v", errOffsetsTopic, err)
		}
	}
	n := int32(len(gc.parts))
	byPart := map[int32][]batch.Record{}
	var order []int32
	for _, r := range recs {
		p := group.PartitionFor(r.GroupID, n)
		if _, ok := byPart[p]; !ok {
			order = append(order, p)
		}
		byPart[p] = append(byPart[p], batch.Record{OffsetDelta: int32(len(byPart[p])), Key: r.Key, Value: r.Value})
	}
	now := nowMillis()
	var errs []error
	for _, pi := range order {
		p := gc.parts[pi]
		one, err := batch.AppendBatch(nil, batch.BuildOptions{BaseTimestamp: now, ProducerID: -1, ProducerEpoch: -1,
			BaseSequence: -1, PartitionLeaderEpoch: p.leaderEpoch}, byPart[pi])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out, err := p.appendBatch(one, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.appended()
		// __consumer_offsets follows its flush policy like any topic, so an
		// answered commit is as durable as an answered produce.
		if err := p.log.FlushAfterAppend(out.end); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// call submits a request to the coordinator and waits for its answer, which
// may be parked behind later events. It fails if the connection or the
// broker goes away first.
func (gc *groupCoordinator) call(r *request, fn func(c *group.Coordinator, now int64, id group.ReplyID)) (any, error) {
	reply := make(chan any, 1)
	select {
	case gc.events <- groupEvent{fn: fn, reply: reply}:
	case <-r.ctx.Done():
		return nil, r.ctx.Err()
	case <-gc.done:
		return nil, errors.New("broker: group coordinator stopped")
	}
	select {
	case res := <-reply:
		return res, nil
	case <-r.ctx.Done():
		return nil, r.ctx.Err()
	case <-gc.done:
		return nil, errors.New("broker: group coordinator stopped")
	}
}

// read runs fn on the coordinator's goroutine for a request that is
// answered at once (DescribeGroups, ListGroups).
func (gc *groupCoordinator) read(r *request, fn func(c *group.Coordinator, now int64)) error {
	var wg sync.WaitGroup
	wg.Add(1)
	ev := groupEvent{fn: func(c *group.Coordinator, now int64, _ group.ReplyID) { fn(c, now); wg.Done() }}
	select {
	case gc.events <- ev:
	case <-r.ctx.Done():
		return r.ctx.Err()
	case <-gc.done:
		return errors.New("broker: group coordinator stopped")
	}
	wg.Wait()
	return nil
}

// stop ends the goroutine; handlers still waiting get an error and close
// their connections.
func (gc *groupCoordinator) stop() {
	gc.cancel()
	<-gc.done
}

// clientHost is the client's address as Kafka reports it: "/" + IP.
func clientHost(r *request) string {
	if r.conn == nil || r.conn.nc == nil {
		return ""
	}
	addr := r.conn.nc.RemoteAddr().String()
	if i := lastColon(addr); i > 0 {
		addr = addr[:i]
	}
	if len(addr) > 1 && addr[0] == '[' {
		addr = addr[1 : len(addr)-1]
	}
	return "/" + addr
}

func lastColon(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			return i
		}
	}
	return -1
}
