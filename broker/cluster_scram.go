package broker

import (
	"context"

	"github.com/gregor-broker/gregor/broker/security/scram"
	"github.com/gregor-broker/gregor/coordinator/controller/metadata"
)

// SCRAM credentials in cluster mode live in the metadata log
// (UserScramCredentialRecord and RemoveUserScramCredentialRecord, written
// by the active controller), as in Kafka: every broker takes them from
// each image it applies (syncScram), so a credential altered through any
// node logs in on every node once that node has applied the change.
// AlterUserScramCredentials is decided on the active controller's write
// path against its image (alterClusterScramCredentials); a node that is
// not the controller forwards the request. --add-scram seeds a new
// cluster's log, as kafka-storage format --add-scram does.

// syncScram takes im's credentials when they are not the ones in force.
// It runs on the goroutine that applies images (syncImage).
func (c *cluster) syncScram(im *metadata.Image) {
	if c.scramFrom != nil && sameScramMaps(c.scramFrom, im.ScramCredentials) {
		return
	}
	c.scramFrom = im.ScramCredentials
	users := make(scramUsers, len(im.ScramCredentials))
	for name, creds := range im.ScramCredentials {
		byMech := make(map[scram.Mechanism]scram.Credential, len(creds))
		for m, cred := range creds {
			byMech[scram.Mechanism(m)] = scram.Credential{Salt: cred.Salt, StoredKey: cred.StoredKey,
				ServerKey: cred.ServerKey, Iterations: cred.Iterations}
		}
		users[name] = byMech
	}
	c.b.scram.set(users)
}

// sameScramMaps reports whether two images hold the same credentials. It
// runs for every applied image, and SCRAM users are few, so it compares
// them all.
func sameScramMaps(a, b map[string]map[int8]metadata.ScramCredential) bool {
	if len(a) != len(b) {
		return false
	}
	for name, ca := range a {
		cb, ok := b[name]
		if !ok || len(ca) != len(cb) {
			return false
		}
		for m, x := range ca {
			y, ok := cb[m]
			if !ok || x.Iterations != y.Iterations || string(x.StoredKey) != string(y.StoredKey) ||
				string(x.ServerKey) != string(y.ServerKey) || string(x.Salt) != string(y.Salt) {
				return false
			}
		}
	}
	return true
}

// addScramRecords are the --add-scram credentials as the records a new
// cluster's log starts with. Of two for the same user and mechanism the
// later wins, as the later record does.
func addScramRecords(args []scram.AddScram) []metadata.Record {
	recs := make([]metadata.Record, 0, len(args))
	for _, a := range args {
		recs = append(recs, scramUpsertRecord(scram.Record{Name: a.Name, Mechanism: int8(a.Mechanism), Credential: a.Credential}))
	}
	return recs
}

func scramUpsertRecord(r scram.Record) *metadata.UserScramCredentialRecord {
	return &metadata.UserScramCredentialRecord{Name: r.Name, Mechanism: r.Mechanism, ScramCredential: metadata.ScramCredential{
		Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations}}
}

// alterClusterScramCredentials decides alter on the active controller
// against its image and writes the accepted changes in one entry. A
// failure to write (NOT_CONTROLLER included) is returned whole.
func (c *cluster) alterClusterScramCredentials(ctx context.Context, alter scram.AlterRequest) ([]scram.AlterResult, error) {
	var outcome scram.AlterOutcome
	err := c.ctrl.AlterUserScramCredentials(ctx, func(current map[string]map[int8]metadata.ScramCredential) []metadata.Record {
		outcome = scram.ValidateAlterations(alter, true, func(name string, m scram.Mechanism) bool {
			_, ok := current[name][int8(m)]
			return ok
		})
		var recs []metadata.Record
		for _, r := range outcome.Removes {
			recs = append(recs, &metadata.RemoveUserScramCredentialRecord{Name: r.Name, Mechanism: r.Mechanism})
		}
		for _, u := range outcome.Upserts {
			recs = append(recs, scramUpsertRecord(u))
		}
		return recs
	})
	if err != nil {
		return nil, err
	}
	for _, r := range outcome.Removes {
		c.b.log.Info("deleted SCRAM credential through the controller", "user", r.Name, "mechanism", scram.Mechanism(r.Mechanism).Name())
	}
	for _, u := range outcome.Upserts {
		c.b.log.Info("set SCRAM credential through the controller", "user", u.Name, "mechanism", scram.Mechanism(u.Mechanism).Name(), "iterations", u.Iterations)
	}
	return outcome.Results, nil
}

// scramAlterFailed answers every user of alter with err's code, as
// Kafka's getErrorResponse answers a request the controller did not take.
func scramAlterFailed(alter scram.AlterRequest, err error) []scram.AlterResult {
	ke, _ := kerrOf(err)
	msg := ke.Description
	var out []scram.AlterResult
	for _, d := range alter.Deletions {
		out = append(out, scram.AlterResult{User: d.Name, ErrorCode: ke.Code, ErrorMessage: &msg})
	}
	for _, u := range alter.Upsertions {
		out = append(out, scram.AlterResult{User: u.Name, ErrorCode: ke.Code, ErrorMessage: &msg})
	}
	return out
}
