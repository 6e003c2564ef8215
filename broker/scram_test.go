package broker

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gregor-broker/gregor/broker/security/scram"
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

// scramRaw drives a SCRAM exchange over raw SaslAuthenticate v2 frames.
type scramRaw struct {
	saslRaw
	m     scram.Mechanism
	first scram.ClientFirst
}

// start sends the handshake and the client-first message for user.
func (c *scramRaw) start(user string) []byte {
	c.t.Helper()
	if hs := c.handshake(1, c.m.Name()); hs.ErrorCode != 0 {
		c.t.Fatalf("handshake %s: error %d", c.m.Name(), hs.ErrorCode)
	}
	c.first = scram.ClientFirst{SaslName: scram.SaslName(user), Nonce: "rawclientnonce"}
	resp := c.token([]byte(c.first.String()))
	if resp.ErrorCode != 0 {
		c.t.Fatalf("client-first: error %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	return resp.SASLAuthBytes
}

// final is the client-final answering serverFirst with password's proof.
func (c *scramRaw) final(serverFirst []byte, password string) scram.ClientFinal {
	c.t.Helper()
	sf, err := scram.ParseServerFirst(serverFirst)
	if err != nil {
		c.t.Fatalf("server-first %q: %v", serverFirst, err)
	}
	salted, err := c.m.SaltedPassword(password, sf.Salt, int(sf.Iterations))
	if err != nil {
		c.t.Fatal(err)
	}
	f := scram.ClientFinal{ChannelBinding: []byte("n,,"), Nonce: sf.Nonce}
	f.Proof = c.m.ClientProof(salted, scram.AuthMessage(c.first.Bare(), sf.String(), f.WithoutProof()))
	return f
}

func (c *scramRaw) token(b []byte) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = 2, b
	return c.do(req).(*kmsg.SASLAuthenticateResponse)
}

// TestSCRAMRawExchanges: the exchange frame by frame, each refusal as
// Kafka 4.4 answers it.
func TestSCRAMRawExchanges(t *testing.T) {
	t.Parallel()
	delay := int64(150)
	b := startSCRAMBroker(t, func(c *Config) { c.FailedAuthenticationDelayMs = &delay })
	dial := func(t *testing.T) *scramRaw { return &scramRaw{saslRaw: dialSASL(t, b), m: scram.SHA512} }
	failed := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
	refused := func(t *testing.T, c *scramRaw, final []byte) {
		t.Helper()
		start := time.Now()
		resp := c.token(final)
		if d := time.Since(start); d < time.Duration(delay)*time.Millisecond {
			t.Errorf("answered after %v, before the %dms delay", d, delay)
		}
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != failed {
			t.Fatalf("answer %d %v, want SASL_AUTHENTICATION_FAILED %q", resp.ErrorCode, resp.ErrorMessage, failed)
		}
		c.expectClosedUnanswered()
	}

	t.Run("right proof, then requests as alice", func(t *testing.T) {
		c := dial(t)
		f := c.final(c.start("alice"), "alice-secret")
		resp := c.token([]byte(f.String()))
		if resp.ErrorCode != 0 || !strings.HasPrefix(string(resp.SASLAuthBytes), "v=") {
			t.Fatalf("client-final: error %d, server-final %q", resp.ErrorCode, resp.SASLAuthBytes)
		}
		if mr := c.do(metadataRequest()).(*kmsg.MetadataResponse); len(mr.Brokers) != 1 {
			t.Fatalf("metadata after authenticating: %d brokers", len(mr.Brokers))
		}
		b.connMu.Lock()
		defer b.connMu.Unlock()
		found := false
		for conn := range b.conns {
			if p := conn.principal.Load(); p.String() == "User:alice" {
				found = true
			}
		}
		if !found {
			t.Error("no connection has the principal User:alice")
		}
	})
	t.Run("bad proof", func(t *testing.T) {
		c := dial(t)
		refused(t, c, []byte(c.final(c.start("alice"), "wrong").String()))
	})
	t.Run("bad nonce", func(t *testing.T) {
		c := dial(t)
		f := c.final(c.start("alice"), "alice-secret")
		f.Nonce = "rawclientnonce" // the client's part alone
		refused(t, c, []byte(f.String()))
	})
	t.Run("malformed client-final", func(t *testing.T) {
		c := dial(t)
		c.start("alice")
		refused(t, c, []byte("c=biws,p=nonsense"))
	})
	t.Run("unknown user fails as a wrong password", func(t *testing.T) {
		c := dial(t)
		if hs := c.handshake(1, "SCRAM-SHA-512"); hs.ErrorCode != 0 {
			t.Fatal(hs.ErrorCode)
		}
		refused(t, c, []byte(scram.ClientFirst{SaslName: "mallory", Nonce: "n"}.String()))
	})
	t.Run("tokenauth is refused", func(t *testing.T) {
		c := dial(t)
		if hs := c.handshake(1, "SCRAM-SHA-512"); hs.ErrorCode != 0 {
			t.Fatal(hs.ErrorCode)
		}
		first := scram.ClientFirst{SaslName: "alice", Nonce: "n", Extensions: []scram.Extension{{Key: "tokenauth", Value: "true"}}}
		refused(t, c, []byte(first.String()))
	})
	t.Run("proof of the wrong length closes unanswered", func(t *testing.T) {
		c := dial(t)
		f := c.final(c.start("alice"), "alice-secret")
		f.Proof = f.Proof[:4]
		c.sendRefused(func() kmsg.Request {
			req := kmsg.NewPtrSASLAuthenticateRequest()
			req.Version, req.SASLAuthBytes = 2, []byte(f.String())
			return req
		}())
		c.expectClosedUnanswered()
	})
}

// TestSCRAMAlterDescribeRestart: kadm alters and describes credentials; a
// new password applies to the next login and the old one fails; the
// credentials survive a restart, which --add-scram does not undo; the
// data file holds no password.
func TestSCRAMAlterDescribeRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	zero := int64(0)
	cfg := Config{
		ListenerName: "SASL_PLAINTEXT", SecurityProtocol: "SASL_PLAINTEXT",
		SASLEnabledMechanisms:       []string{"SCRAM-SHA-256", "SCRAM-SHA-512"},
		AddScram:                    []string{"SCRAM-SHA-512=[name=alice,password=alice-secret]"},
		FailedAuthenticationDelayMs: &zero, GroupInitialRebalanceDelayMs: &zero, DataDir: dir,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { b.Close() }()
	loginErr := func(opt kgo.Opt) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), opt, kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	admin := func(login kgo.Opt) *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), login)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	adm := admin(scram512("alice", "alice-secret"))

	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := described["alice"]; d.Err != nil || len(d.CredInfos) != 1 || d.CredInfos[0].Mechanism != kadm.ScramSha512 || d.CredInfos[0].Iterations != 4096 {
		t.Fatalf("describe all: %+v", described)
	}

	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-new"},
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
	})
	if err != nil || !altered.Ok() {
		t.Fatalf("alter: %v %+v", err, altered)
	}
	if err := loginErr(scram512("alice", "alice-new")); err != nil {
		t.Errorf("alice with the new password: %v", err)
	}
	if err := loginErr(scram512("alice", "alice-secret")); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("alice with the old password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if err := loginErr(scram256("bob", "bob-secret")); err != nil {
		t.Errorf("bob: %v", err)
	}

	// Restart with the same --add-scram: alice keeps her new password.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err = Start(ctx, cfg); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := loginErr(scram512("alice", "alice-new")); err != nil {
		t.Errorf("alice with the new password after the restart: %v", err)
	}
	if err := loginErr(scram512("alice", "alice-secret")); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("alice with the --add-scram password after the restart: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	adm = admin(scram256("bob", "bob-secret"))
	described, err = adm.DescribeUserSCRAMs(ctx, "alice", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["alice"]; d.Err != nil || len(d.CredInfos) != 1 || d.CredInfos[0].Iterations != 8192 {
		t.Errorf("alice after the restart: %+v", d)
	}
	if d := described["bob"]; d.Err != nil || len(d.CredInfos) != 1 || d.CredInfos[0].Mechanism != kadm.ScramSha256 {
		t.Errorf("bob after the restart: %+v", d)
	}

	// Deleting alice's credential ends her logins.
	if altered, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha512}}, nil); err != nil || !altered.Ok() {
		t.Fatalf("delete: %v %+v", err, altered)
	}
	if err := loginErr(scram512("alice", "alice-new")); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("alice after the deletion: %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	raw, err := os.ReadFile(filepath.Join(dir, metadataFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"alice-secret", "alice-new", "bob-secret"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("%s holds the password %s", metadataFile, secret)
		}
	}
	if !strings.Contains(string(raw), `"scram_credentials"`) {
		t.Errorf("%s holds no SCRAM credentials", metadataFile)
	}
	if fi, err := os.Stat(filepath.Join(dir, metadataFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, %v; want 0600", metadataFile, fi.Mode(), err)
	}
}

// TestSCRAMAdminRefusals: Describe and Alter's per-user errors with
// Kafka's codes and messages, sent raw so the client does not filter them.
func TestSCRAMAdminRefusals(t *testing.T) {
	t.Parallel()
	b := startSCRAMBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), scram512("alice", "alice-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	describe := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, name := range []string{"alice", "nobody", "twice", "twice"} {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = name
		describe.Users = append(describe.Users, u)
	}
	dr, err := describe.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		code int16
		msg  string
	}
	got := map[string]result{}
	for _, r := range dr.Results {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		got[r.User] = result{r.ErrorCode, msg}
	}
	wantDescribe := map[string]result{
		"alice":  {0, ""},
		"nobody": {kerr.ResourceNotFound.Code, "Attempt to describe a user credential that does not exist: nobody"},
		"twice":  {kerr.DuplicateResource.Code, "Cannot describe SCRAM credentials for the same user twice in a single request: twice"},
	}
	if len(dr.Results) != len(wantDescribe) {
		t.Errorf("describe: %d results, want %d", len(dr.Results), len(wantDescribe))
	}
	for user, want := range wantDescribe {
		if got[user] != want {
			t.Errorf("describe %s: %+v, want %+v", user, got[user], want)
		}
	}

	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	upsert := func(name string, mech int8, iterations int32) {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations = name, mech, iterations
		u.Salt, u.SaltedPassword = []byte("salt"), make([]byte, 64)
		alter.Upsertions = append(alter.Upsertions, u)
	}
	del := func(name string, mech int8) {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = name, mech
		alter.Deletions = append(alter.Deletions, d)
	}
	del("nobody", 2)
	del("alice", 2)
	upsert("alice", 2, 4096)
	upsert("few", 2, 4095)
	upsert("many", 2, 16385)
	upsert("unknown-mech", 3, 4096)
	upsert("", 1, 4096)
	upsert("carol", 1, 4096)
	ar, err := alter.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	got = map[string]result{}
	for _, r := range ar.Results {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		got[r.User] = result{r.ErrorCode, msg}
	}
	wantAlter := map[string]result{
		"nobody":       {kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"},
		"alice":        {kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"},
		"few":          {kerr.UnacceptableCredential.Code, "Too few iterations"},
		"many":         {kerr.UnacceptableCredential.Code, "Too many iterations"},
		"unknown-mech": {kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"},
		"":             {kerr.UnacceptableCredential.Code, "Username must not be empty"},
		"carol":        {0, ""},
	}
	if len(ar.Results) != len(wantAlter) {
		t.Errorf("alter: %d results, want %d", len(ar.Results), len(wantAlter))
	}
	for user, want := range wantAlter {
		if got[user] != want {
			t.Errorf("alter %q: %+v, want %+v", user, got[user], want)
		}
	}
	if _, ok := b.scram.lookup("carol", scram.SHA256); !ok {
		t.Error("carol's credential was not stored")
	}
	if _, ok := b.scram.lookup("alice", scram.SHA512); !ok {
		t.Error("alice's credential was deleted by a refused request")
	}
	for _, user := range []string{"few", "many", "unknown-mech"} {
		for _, m := range scram.Mechanisms {
			if _, ok := b.scram.lookup(user, m); ok {
				t.Errorf("refused %s has a %s credential", user, m)
			}
		}
	}
}

// TestSCRAMKeysServedInBothModes: a single node and a cluster node serve
// and advertise DescribeUserScramCredentials and AlterUserScramCredentials
// at v0 (a cluster's credentials are metadata records).
func TestSCRAMKeysServedInBothModes(t *testing.T) {
	t.Parallel()
	b := startBroker(t, Config{})
	c := dialRaw(t, b.Addr())
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version, av.ClientSoftwareName, av.ClientSoftwareVersion = 3, "raw", "1"
	keys := map[int16]kmsg.ApiVersionsResponseApiKey{}
	for _, k := range c.do(av).(*kmsg.ApiVersionsResponse).ApiKeys {
		keys[k.ApiKey] = k
	}
	clusterNode := &Broker{cluster: &cluster{}}
	for _, key := range []int16{50, 51} {
		if k, ok := keys[key]; !ok || k.MinVersion != 0 || k.MaxVersion != 0 {
			t.Errorf("single node: key %d advertised %v (%+v), want v0", key, ok, k)
		}
		if h := handlers[key]; !h.served(clusterNode) || !h.advertised(clusterNode) {
			t.Errorf("cluster node: key %d not served or not advertised", key)
		}
	}
	// A PLAINTEXT single node answers Describe with no users.
	describe := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	if dr := c.do(describe).(*kmsg.DescribeUserSCRAMCredentialsResponse); dr.ErrorCode != 0 || len(dr.Results) != 0 {
		t.Errorf("describe on a node without credentials: %+v", dr)
	}
}

// TestSCRAMLibrdkafka: librdkafka (confluent-kafka-go) logs in with
// SCRAM-SHA-512, produces and consumes; with a wrong password it reports
// the authentication failure.
func TestSCRAMLibrdkafka(t *testing.T) {
	t.Parallel()
	b := startSCRAMBroker(t, nil)
	common := kafka.ConfigMap{
		"bootstrap.servers": b.Addr(),
		"security.protocol": "SASL_PLAINTEXT",
		"sasl.mechanisms":   "SCRAM-SHA-512",
		"sasl.username":     "alice",
		"sasl.password":     "alice-secret",
		"log_level":         3,
	}
	librdkafkaProduceConsume(t, common, "scram-librdkafka", nil)

	bad := kafka.ConfigMap{}
	for k, v := range common {
		bad[k] = v
	}
	bad["sasl.password"] = "wrong"
	p, err := kafka.NewProducer(&bad)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case ev := <-p.Events():
			ke, ok := ev.(kafka.Error)
			if !ok || ke.Code() != kafka.ErrAuthentication {
				continue
			}
			want := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
			if !strings.Contains(ke.Error(), want) {
				t.Fatalf("librdkafka's error %q lacks Kafka's message", ke)
			}
			return
		case <-timeout:
			t.Fatal("librdkafka reported no authentication error for a wrong password")
		}
	}
}

// TestSCRAMFranzReauthenticates: with connections.max.reauth.ms a SCRAM
// session is renewed by the client (KIP-368) on the same connections.
func TestSCRAMFranzReauthenticates(t *testing.T) {
	t.Parallel()
	b := startSCRAMBroker(t, func(c *Config) { c.ConnectionsMaxReauthMs = 1500 })
	checkFranzReauthenticates(t, b, scram512("alice", "alice-secret"), "scram-reauth")
}

// TestSCRAMWarnsWithoutUsers: a SCRAM listener without any credential
// starts (as Kafka's does) with a warning; with one, no warning.
func TestSCRAMWarnsWithoutUsers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addScram []string
		warn     bool
	}{{nil, true}, {[]string{"SCRAM-SHA-256=[name=a,password=b]"}, false}} {
		var logs syncBuffer
		startSCRAMBroker(t, func(c *Config) {
			c.AddScram = tc.addScram
			c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		})
		if got := strings.Contains(logs.String(), "no user has a SCRAM credential"); got != tc.warn {
			t.Errorf("--add-scram %q: warned %v, want %v; logs:\n%s", tc.addScram, got, tc.warn, logs.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestLoadScramUsersRefusesBadRecords: a credential that could not verify
// a login refuses the metadata file, naming the user but no key.
func TestLoadScramUsersRefusesBadRecords(t *testing.T) {
	key32, key64 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 64)
	good := scramCredentialRecord{Name: "alice", Mechanism: "SCRAM-SHA-256", Salt: []byte("s"), StoredKey: key32, ServerKey: key32, Iterations: 4096}
	for _, tc := range []struct {
		name   string
		adjust func(*scramCredentialRecord)
		want   string
	}{
		{"unknown mechanism", func(r *scramCredentialRecord) { r.Mechanism = "SCRAM-SHA-1" }, `user "alice": unknown mechanism "SCRAM-SHA-1"`},
		{"empty name", func(r *scramCredentialRecord) { r.Name = "" }, "an empty user name"},
		{"short stored key", func(r *scramCredentialRecord) { r.StoredKey = key32[:31] }, "keys of 31 and 32 bytes, want 32"},
		{"keys of the other mechanism", func(r *scramCredentialRecord) { r.Mechanism = "SCRAM-SHA-512" }, "keys of 32 and 32 bytes, want 64"},
		{"no iterations", func(r *scramCredentialRecord) { r.Iterations = 0 }, "0 iterations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good
			tc.adjust(&r)
			_, err := loadScramUsers([]scramCredentialRecord{r})
			if err == nil || !errors.Is(err, errBadScramRecord) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	users, err := loadScramUsers([]scramCredentialRecord{good, {Name: "alice", Mechanism: "SCRAM-SHA-512", StoredKey: key64, ServerKey: key64, Iterations: 8192}})
	if err != nil {
		t.Fatal(err)
	}
	if len(users["alice"]) != 2 || users["alice"][scram.SHA512].Iterations != 8192 {
		t.Fatalf("loaded %+v", users)
	}
	if got := users.records(); len(got) != 2 || got[0].Mechanism != "SCRAM-SHA-256" || got[1].Mechanism != "SCRAM-SHA-512" {
		t.Fatalf("records %+v, want both, SCRAM-SHA-256 first", got)
	}
}

// TestScramUsersWith: a change builds a new value and leaves the
// published one as it was (a login may be reading it).
func TestScramUsersWith(t *testing.T) {
	c := func(it int32) scram.Credential { return scram.Credential{Iterations: it} }
	old := scramUsers{"alice": {scram.SHA256: c(4096), scram.SHA512: c(4096)}, "bob": {scram.SHA256: c(4096)}}
	next := old.with(
		[]scram.RemoveRecord{{Name: "alice", Mechanism: int8(scram.SHA256)}, {Name: "bob", Mechanism: int8(scram.SHA256)}},
		[]scram.Record{{Name: "alice", Mechanism: int8(scram.SHA512), Credential: c(8192)}, {Name: "carol", Mechanism: int8(scram.SHA256), Credential: c(5000)}})
	if len(old) != 2 || len(old["alice"]) != 2 || old["alice"][scram.SHA512].Iterations != 4096 || len(old["bob"]) != 1 {
		t.Fatalf("the old value changed: %+v", old)
	}
	if _, ok := next["bob"]; ok {
		t.Errorf("bob, without credentials, is still listed: %+v", next)
	}
	if len(next["alice"]) != 1 || next["alice"][scram.SHA512].Iterations != 8192 || next["carol"][scram.SHA256].Iterations != 5000 {
		t.Errorf("new value %+v", next)
	}
}

// TestSCRAMOverSASLSSL: SCRAM-SHA-512 on a SASL_SSL listener: TLS first,
// then the SCRAM exchange, whose user is the principal.
func TestSCRAMOverSASLSSL(t *testing.T) {
	t.Parallel()
	p := newTestPKI(t)
	b := startTLSBroker(t, p, "none", func(c *Config) {
		c.ListenerName, c.SecurityProtocol = "SASL_SSL", "SASL_SSL"
		c.SASLEnabledMechanisms = []string{"SCRAM-SHA-512"}
		c.AddScram = []string{"SCRAM-SHA-512=[name=alice,password=alice-secret]"}
	})
	checkSASLSSL(t, b, p.clientTLS(), scram512("alice", "alice-secret"), scram512("alice", "wrong"), "scram-ssl",
		"invalid credentials with SASL mechanism SCRAM-SHA-512")
}
