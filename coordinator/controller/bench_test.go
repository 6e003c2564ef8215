package controller

import (
	"fmt"
	"testing"
)

// BenchmarkCreateTopicSingleVoter measures one metadata write end to end on
// a one-voter quorum on disk: validate, propose, WAL append with fsync,
// commit, apply and publish, for a topic of 3 partitions in an image that
// grows by one topic per iteration.
func BenchmarkCreateTopicSingleVoter(b *testing.B) {
	q := newQuorum(b, 1, nil)
	c := q.active()
	for id := int32(1); id <= 3; id++ {
		register(b, c, id, "")
	}
	for i := 0; b.Loop(); i++ {
		res, err := c.CreateTopics(ctx(b), []CreateTopic{{Name: fmt.Sprintf("bench-%d", i), NumPartitions: 3, ReplicationFactor: 3}}, false)
		if err != nil || res[0].Err != nil {
			b.Fatal(err, res)
		}
	}
}
