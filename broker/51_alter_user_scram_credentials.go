package broker

// AlterUserScramCredentials (key 51), v0.
//
// Behavior:
//   - decided as Kafka's ScramControlManager.alterCredentials
//     (scram.ValidateAlterations): a user named twice DUPLICATE_RESOURCE,
//     an empty name or iterations outside [4096, 16384]
//     UNACCEPTABLE_CREDENTIAL, an unknown mechanism
//     UNSUPPORTED_SASL_MECHANISM, a deletion of a credential not stored
//     RESOURCE_NOT_FOUND, with Kafka's messages;
//   - on a single node the accepted changes are saved together in
//     gregor-topics.json (the salt and the stored and server keys derived
//     from the salted password, never the salted password) before the
//     answer, and apply to the next login; a failed write answers every
//     accepted user UNKNOWN_SERVER_ERROR and changes nothing;
//   - in cluster mode the active controller decides against its metadata
//     image and writes the changes as UserScramCredentialRecords and
//     RemoveUserScramCredentialRecords in one entry (cluster_scram.go);
//     another node forwards the request; every node's logins use a change
//     once it has applied it; a request the controller did not take
//     answers every user with that error (NOT_CONTROLLER,
//     REQUEST_TIMED_OUT), as Kafka;
//   - no authorizer: answered as Kafka without one.
//
// docs/apis.md#alteruserscramcredentials has the details.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/security/scram"
)

func init() { register(51, 0, 0, handleAlterUserScramCredentials) }

func handleAlterUserScramCredentials(b *Broker, r *request, req *kmsg.AlterUserSCRAMCredentialsRequest) (kmsg.Response, error) {
	resp := newResponse[*kmsg.AlterUserSCRAMCredentialsResponse](req)
	var alter scram.AlterRequest
	for _, d := range req.Deletions {
		alter.Deletions = append(alter.Deletions, scram.Deletion{Name: d.Name, Mechanism: d.Mechanism})
	}
	for _, u := range req.Upsertions {
		alter.Upsertions = append(alter.Upsertions, scram.Upsertion{Name: u.Name, Mechanism: u.Mechanism,
			Iterations: u.Iterations, Salt: u.Salt, SaltedPassword: u.SaltedPassword})
	}
	var results []scram.AlterResult
	if b.isCluster() {
		fwd, err := b.cluster.controllerCall(r, req, func(ctx context.Context) error {
			var err error
			results, err = b.cluster.alterClusterScramCredentials(ctx, alter)
			return err
		})
		if fwd != nil {
			return fwd, nil
		}
		if err != nil {
			results = scramAlterFailed(alter, err)
		}
	} else {
		results = b.alterScramCredentials(alter)
	}
	for _, res := range results {
		out := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		out.User, out.ErrorCode, out.ErrorMessage = res.User, res.ErrorCode, res.ErrorMessage
		resp.Results = append(resp.Results, out)
	}
	return resp, nil
}

// alterScramCredentials decides, persists and publishes an alteration.
func (b *Broker) alterScramCredentials(alter scram.AlterRequest) []scram.AlterResult {
	b.mu.Lock()
	old := b.scram.current()
	outcome := scram.ValidateAlterations(alter, true, func(name string, m scram.Mechanism) bool {
		_, ok := old[name][m]
		return ok
	})
	if len(outcome.Removes) == 0 && len(outcome.Upserts) == 0 {
		b.mu.Unlock()
		return outcome.Results
	}
	b.scram.set(old.with(outcome.Removes, outcome.Upserts))
	err := b.catalog.save()
	if err != nil {
		b.scram.set(old)
	}
	b.mu.Unlock()
	if err != nil {
		b.log.Error("altering SCRAM credentials failed", "err", err)
		msg := err.Error()
		for i := range outcome.Results {
			if outcome.Results[i].ErrorCode == 0 {
				outcome.Results[i].ErrorCode, outcome.Results[i].ErrorMessage = kerr.UnknownServerError.Code, &msg
			}
		}
		return outcome.Results
	}
	for _, r := range outcome.Removes {
		b.log.Info("deleted SCRAM credential", "user", r.Name, "mechanism", scram.Mechanism(r.Mechanism).Name())
	}
	for _, u := range outcome.Upserts {
		b.log.Info("set SCRAM credential", "user", u.Name, "mechanism", scram.Mechanism(u.Mechanism).Name(), "iterations", u.Credential.Iterations)
	}
	return outcome.Results
}
