package broker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/protocol/batch"
)

// TestOffsetForLeaderEpochAnswers asks every served version about the
// current epoch, an older and a newer one, -1, fenced and unknown current
// epochs and unknown partitions, and checks Kafka's answers.
func TestOffsetForLeaderEpochAnswers(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	createTopic(t, c, "e", 2, nil)
	for range 3 {
		if p := produceRaw(c, 9, 1, "e", 0, makeBatch(t, batch.None, 4, 1)); p.ErrorCode != 0 {
			t.Fatalf("produce: %d", p.ErrorCode)
		}
	}
	type ask struct {
		topic          string
		partition      int32
		current, epoch int32
	}
	type answer struct {
		code  int16
		epoch int32
		end   int64
	}
	for version := int16(2); version <= 4; version++ {
		for _, tc := range []struct {
			name string
			ask  ask
			want answer
		}{
			{"current epoch: log end", ask{"e", 0, -1, 0}, answer{0, 0, 12}},
			{"current epoch checked", ask{"e", 0, 0, 0}, answer{0, 0, 12}},
			{"empty partition", ask{"e", 1, -1, 0}, answer{0, 0, 0}},
			{"newer epoch: undefined", ask{"e", 0, -1, 3}, answer{0, -1, -1}},
			{"undefined epoch", ask{"e", 0, -1, -1}, answer{0, -1, -1}},
			{"client ahead of the leader", ask{"e", 0, 1, 0}, answer{kerr.UnknownLeaderEpoch.Code, -1, -1}},
			{"unknown partition", ask{"e", 9, -1, 0}, answer{kerr.UnknownTopicOrPartition.Code, -1, -1}},
			{"unknown topic", ask{"nope", 0, -1, 0}, answer{kerr.UnknownTopicOrPartition.Code, -1, -1}},
		} {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.SetVersion(version)
			req.ReplicaID = -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = tc.ask.topic
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = tc.ask.partition, tc.ask.current, tc.ask.epoch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp := c.do(req).(*kmsg.OffsetForLeaderEpochResponse)
			p := resp.Topics[0].Partitions[0]
			if got := (answer{p.ErrorCode, p.LeaderEpoch, p.EndOffset}); got != tc.want || p.Partition != tc.ask.partition {
				t.Errorf("v%d %s: got %+v for partition %d, want %+v", version, tc.name, got, p.Partition, tc.want)
			}
		}
	}
}

// TestOffsetForLeaderEpochWithKadmAcrossRestart asks through franz-go's
// admin client, restarts the broker, and asks again: the leader-epoch
// checkpoint (Kafka's file, in the partition directory) keeps the answer.
func TestOffsetForLeaderEpochWithKadmAcrossRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	first := startBroker(t, Config{DataDir: dir})
	adm, cl := newAdmin(t, first.Addr())
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	recs := franzRecords(testRecords(25))
	for _, r := range recs {
		r.Topic = "t"
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	check := func(adm *kadm.Client) {
		t.Helper()
		var req kadm.OffsetForLeaderEpochRequest
		req.Add("t", 0, 0)
		resp, err := adm.OffsetForLeaderEpoch(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp["t"][0]; got.Err != nil || got.LeaderEpoch != 0 || got.EndOffset != 25 {
			t.Fatalf("OffsetForLeaderEpoch = %+v, want epoch 0 ending at 25", got)
		}
	}
	check(adm)
	cl.Close()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(dir, "t-0", "leader-epoch-checkpoint"))
	if err != nil || string(text) != "0\n1\n0 0\n" {
		t.Fatalf("leader-epoch-checkpoint = %q, %v", text, err)
	}
	second := startBroker(t, Config{DataDir: dir})
	adm2, _ := newAdmin(t, second.Addr())
	check(adm2)
}
