package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// sharePersister carries a share-partition leader's reads and writes of
// its durable state to the share coordinator, as Kafka's Persister does:
// the leader reads a share-partition's state when it first serves it
// (ReadShareGroupState) and writes every change before it answers the
// consumer (WriteShareGroupState). The answers are the share
// coordinator's, per partition, with Kafka's error codes; an error is a
// failure to reach it at all. On a single node the persister is the
// node's own share coordinator (share_coordinator.go); in cluster mode it
// reaches the leader of the __share_group_state partition the group,
// topic and partition map to. The group coordinator also uses it, as
// Kafka's does: to initialize the state of a share group's partitions
// before assigning them (InitializeShareGroupState), and to delete a
// share group's state with the group (DeleteShareGroupState).
type sharePersister interface {
	readShareState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error)
	writeShareState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error)
	initializeShareState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error)
	deleteShareState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error)
}
