package controller

import (
	"context"

	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// AlterUserScramCredentials writes the records decide returns for the
// users' SCRAM credentials as they are in the active controller's image
// (UserScramCredentialRecords and RemoveUserScramCredentialRecords), in one
// entry. decide runs once, on the controller's write path, so no other
// write comes between what it reads and what it writes, as Kafka's
// ScramControlManager decides on the controller's event queue; it must
// not keep the map. The caller (the broker) validates the request in
// decide: the controller does not know SCRAM's rules. A node that is not
// the active controller answers NotControllerError without calling decide.
func (c *Controller) AlterUserScramCredentials(ctx context.Context, decide func(current map[string]map[int8]metadata.ScramCredential) []metadata.Record) error {
	if leader := c.Leader(); leader != c.cfg.NodeID {
		return &NotControllerError{LeaderID: leader}
	}
	_, err := c.write(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		return decide(im.ScramCredentials), nil
	})
	return err
}
