//go:build cluster

package broker

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gregor-broker/gregor/broker/security/scram"
)

// scramOn lists node id's SCRAM credentials as DescribeUserScramCredentials
// answers them, sorted lines "user mechanism iterations".
func (tc *testCluster) scramOn(id int32) []string {
	tc.t.Helper()
	resp := tc.rawDo(id, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if resp.ErrorCode != 0 {
		tc.t.Fatalf("describe on node %d: %v", id, kerr.ErrorForCode(resp.ErrorCode))
	}
	var out []string
	for _, r := range resp.Results {
		for _, c := range r.CredentialInfos {
			out = append(out, fmt.Sprintf("%s %s %d", r.User, scram.Mechanism(c.Mechanism).Name(), c.Iterations))
		}
	}
	sort.Strings(out)
	return out
}

// waitForScram waits until every live node describes want.
func (tc *testCluster) waitForScram(want ...string) {
	tc.t.Helper()
	for _, id := range tc.live() {
		waitLong(tc.t, fmt.Sprintf("node %d to describe %q", id, want), func() bool {
			return slices.Equal(tc.scramOn(id), want)
		})
	}
}

// TestClusterScramCredentials: --add-scram seeds a new cluster's metadata
// log; AlterUserScramCredentials through a node that is not the
// controller is forwarded, decided by the controller with the single
// node's errors, and reaches every node's logins; a node answering a
// forwarded request it cannot take says NOT_CONTROLLER for every user;
// the credentials survive a restart of the whole cluster, and the
// --add-scram flags given again do not bring back a deleted credential.
func TestClusterScramCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster")
	}
	ctx := testCtx(t)
	seed := "SCRAM-SHA-256=[name=seed,password=seed-secret,iterations=8192]"
	zero := int64(0)
	tc := startClusterWith(t, 3, func(c *Config) {
		c.AddScram = []string{seed}
		// Clients log in with SCRAM on CLIENT; the nodes talk on INTERNAL.
		c.Listeners = []ListenerConfig{{Name: "INTERNAL"}, {Name: "CLIENT", SecurityProtocol: "SASL_PLAINTEXT",
			SASLEnabledMechanisms: []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}}}
		c.InterBrokerListenerName = "INTERNAL"
		c.FailedAuthenticationDelayMs = &zero
	})
	// loginErr logs in on node id's SCRAM listener and asks for metadata.
	loginErr := func(id int32, login kgo.Opt) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(tc.nodes[id].ListenerAddr("CLIENT")), login, kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	// waitLogin waits until every node logs user in with password (or,
	// refused, refuses it).
	waitLogin := func(login kgo.Opt, refused bool) {
		t.Helper()
		for _, id := range tc.live() {
			waitLong(t, fmt.Sprintf("node %d's SCRAM login (refused: %v)", id, refused), func() bool {
				err := loginErr(id, login)
				if refused {
					return errors.Is(err, kerr.SaslAuthenticationFailed)
				}
				return err == nil
			})
		}
	}
	tc.waitForScram("seed SCRAM-SHA-256 8192")
	waitLogin(scram256("seed", "seed-secret"), false)
	for _, id := range tc.live() {
		cred, ok := tc.nodes[id].scram.lookup("seed", scram.SHA256)
		want, err := scram.NewCredential(scram.SHA256, "seed-secret", cred.Salt, 8192)
		if !ok || err != nil || !bytes.Equal(cred.StoredKey, want.StoredKey) || !bytes.Equal(cred.ServerKey, want.ServerKey) {
			t.Fatalf("node %d: the seeded credential does not verify seed-secret (%v, %v)", id, ok, err)
		}
	}

	ctrl := tc.controller(1)
	var others []int32
	for _, id := range tc.live() {
		if id != ctrl {
			others = append(others, id)
		}
	}

	// Forwarded to a node that is not the controller: NOT_CONTROLLER for
	// every user, as Kafka's getErrorResponse.
	notCtrl := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "seed", 1
	ups := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	ups.Name, ups.Mechanism, ups.Iterations, ups.Salt, ups.SaltedPassword = "zed", 2, 4096, []byte("salt"), bytes.Repeat([]byte{1}, 64)
	notCtrl.Deletions, notCtrl.Upsertions = append(notCtrl.Deletions, del), append(notCtrl.Upsertions, ups)
	res := tc.doForwarded(others[1], notCtrl).(*kmsg.AlterUserSCRAMCredentialsResponse)
	if len(res.Results) != 2 {
		t.Fatalf("forwarded to node %d: %+v", others[1], res.Results)
	}
	for _, r := range res.Results {
		if r.ErrorCode != kerr.NotController.Code || r.ErrorMessage == nil || *r.ErrorMessage != kerr.NotController.Description {
			t.Fatalf("forwarded to node %d: %+v", others[1], r)
		}
	}

	// Through a node that is not the controller, with kadm.
	cl := tc.client(others[0])
	adm := kadm.NewClient(cl)
	altered, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "seed", Mechanism: kadm.ScramSha256}},
		[]kadm.UpsertSCRAM{
			{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-secret"},
			{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
		})
	if err != nil || !altered.Ok() {
		t.Fatalf("alter through node %d: %v %+v", others[0], err, altered)
	}
	tc.waitForScram("alice SCRAM-SHA-512 8192", "bob SCRAM-SHA-256 4096")
	waitLogin(scram512("alice", "alice-secret"), false)
	waitLogin(scram256("bob", "bob-secret"), false)
	waitLogin(scram256("seed", "seed-secret"), true)
	for _, id := range tc.live() {
		cred, ok := tc.nodes[id].scram.lookup("alice", scram.SHA512)
		want, err := scram.NewCredential(scram.SHA512, "alice-secret", cred.Salt, 8192)
		if !ok || err != nil || !bytes.Equal(cred.StoredKey, want.StoredKey) {
			t.Fatalf("node %d: alice's credential does not verify her password (%v, %v)", id, ok, err)
		}
		if _, ok := tc.nodes[id].scram.lookup("seed", scram.SHA256); ok {
			t.Fatalf("node %d still logs seed in", id)
		}
	}

	// The controller's refusals are the single node's, forwarded through
	// another node.
	upsert := func(name string, mech int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = name, mech, iterations, []byte("salt"), bytes.Repeat([]byte{1}, 32)
		return u
	}
	bad := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	bad.Deletions = append(bad.Deletions, del) // seed's, deleted above
	bad.Upsertions = append(bad.Upsertions, upsert("carol", 1, 100), upsert("dave", 1, 4096), upsert("dave", 2, 4096))
	codes := map[string]int16{}
	for _, r := range tc.rawDo(others[0], bad).(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
		codes[r.User] = r.ErrorCode
	}
	wantCodes := map[string]int16{"seed": kerr.ResourceNotFound.Code, "carol": kerr.UnacceptableCredential.Code, "dave": kerr.DuplicateResource.Code}
	if !maps.Equal(codes, wantCodes) {
		t.Fatalf("refusals: %v, want %v", codes, wantCodes)
	}
	tc.waitForScram("alice SCRAM-SHA-512 8192", "bob SCRAM-SHA-256 4096")

	// The whole cluster restarts with the same --add-scram flags.
	ids := tc.live()
	for _, id := range ids {
		tc.close(id)
	}
	tc.restart(ids...)
	tc.waitForBrokers(tc.live(), len(ids))
	tc.waitForScram("alice SCRAM-SHA-512 8192", "bob SCRAM-SHA-256 4096")
	waitLogin(scram512("alice", "alice-secret"), false)
	waitLogin(scram256("seed", "seed-secret"), true)
}
