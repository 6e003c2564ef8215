//go:build cluster

package broker

import "testing"

// TestClusterConsumerGroupSlidingResubscriptionConverges is
// TestConsumerGroupSlidingResubscriptionConverges (consumer_group_resubscribe_test.go)
// against a 3-node cluster, the group's coordinator on whichever node owns
// its __consumer_offsets partition.
func TestClusterConsumerGroupSlidingResubscriptionConverges(t *testing.T) {
	tc := startClusterWith(t, 3, func(c *Config) { c.GroupConsumerHeartbeatIntervalMs = 100 })
	var addrs []string
	for _, id := range []int32{1, 2, 3} {
		addrs = append(addrs, tc.nodes[id].Addr())
	}
	testSlidingWindow(t, addrs)
}
