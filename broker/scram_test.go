package broker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// startSCRAMBroker starts a single node whose SASL_PLAINTEXT listener
// serves SCRAM-SHA-256 and SCRAM-SHA-512, with alice's SCRAM-SHA-512
// credential from --add-scram.
func startSCRAMBroker(t *testing.T, adjust func(*Config)) *Broker {
	t.Helper()
	return startSASLBroker(t, func(c *Config) {
		c.SASLEnabledMechanisms = []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}
		c.SASLPlainJAASConfig = ""
		c.AddScram = []string{"SCRAM-SHA-512=[name=alice,password=alice-secret]"}
		if adjust != nil {
			adjust(c)
		}
	})
}

func scram512(user, pass string) kgo.Opt {
	return kgo.SASL(kscram.Auth{User: user, Pass: pass}.AsSha512Mechanism())
}

func scram256(user, pass string) kgo.Opt {
	return kgo.SASL(kscram.Auth{User: user, Pass: pass}.AsSha256Mechanism())
}

// TestSCRAMFranzProduceConsume: franz-go logs in with SCRAM-SHA-512 and a
// credential --add-scram created, produces and consumes.
func TestSCRAMFranzProduceConsume(t *testing.T) {
	t.Parallel()
	b := startSCRAMBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), scram512("alice", "alice-secret"),
		kgo.ConsumeTopics("scram-franz"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "scram-franz", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "hello" {
		t.Fatalf("consumed %v", recs)
	}
}

// TestSCRAMFranzRefusals: a wrong password, an unknown user and a
// mechanism the user has no credential for all get
// SASL_AUTHENTICATION_FAILED with the same message of Kafka's.
func TestSCRAMFranzRefusals(t *testing.T) {
	t.Parallel()
	b := startSCRAMBroker(t, nil)
	for _, tc := range []struct {
		name string
		opt  kgo.Opt
		mech string
	}{
		{"wrong password", scram512("alice", "wrong"), "SCRAM-SHA-512"},
		{"unknown user", scram512("mallory", "alice-secret"), "SCRAM-SHA-512"},
		{"no credential for the mechanism", scram256("alice", "alice-secret"), "SCRAM-SHA-256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), tc.opt, kgo.RequestRetries(0))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			if !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("metadata: %v, want SASL_AUTHENTICATION_FAILED", err)
			}
			want := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + tc.mech
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks Kafka's message %q", err, want)
			}
		})
	}
}
