package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"io"

	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/gregor-broker/gregor/protocol"
)

const saslTestJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required
	user_alice="alice-secret"
	user_bob="bob-secret";`

// startSASLBroker starts a broker whose listener is SASL_PLAINTEXT with
// PLAIN for alice and bob.
func startSASLBroker(t *testing.T, adjust func(*Config)) *Broker {
	t.Helper()
	zero := int64(0)
	cfg := Config{
		ListenerName:                 "SASL_PLAINTEXT",
		SecurityProtocol:             "SASL_PLAINTEXT",
		SASLEnabledMechanisms:        []string{"PLAIN"},
		SASLPlainJAASConfig:          saslTestJAAS,
		FailedAuthenticationDelayMs:  &zero,
		GroupInitialRebalanceDelayMs: &zero,
	}
	if adjust != nil {
		adjust(&cfg)
	}
	return startBroker(t, cfg)
}

// saslCounter reads a counter.
func saslCounter(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

func plainOpt(user, pass string) kgo.Opt {
	return kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())
}

// TestSASLPlainFranzProduceConsume: franz-go authenticates with PLAIN,
// produces and consumes; the connection's principal is the user.
func TestSASLPlainFranzProduceConsume(t *testing.T) {
	t.Parallel()
	b := startSASLBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), plainOpt("alice", "alice-secret"),
		kgo.ConsumeTopics("sasl-franz"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sasl-franz", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	recs := fs.Records()
	if len(recs) != 1 || string(recs[0].Value) != "hello" {
		t.Fatalf("consumed %d records, want the one produced", len(recs))
	}
	if n := saslCounter(b.metrics.successfulAuthentications); n < 1 {
		t.Errorf("successful authentications %v, want at least 1", n)
	}
	b.connMu.Lock()
	for c := range b.conns {
		if p := c.principal.Load(); p.String() != "User:alice" {
			t.Errorf("connection principal %s, want User:alice", p)
		}
	}
	b.connMu.Unlock()
}

// TestSASLPlainFranzWrongPassword: the client sees
// SASL_AUTHENTICATION_FAILED and Kafka's message, and the failure is
// counted.
func TestSASLPlainFranzWrongPassword(t *testing.T) {
	t.Parallel()
	b := startSASLBroker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), plainOpt("alice", "wrong"), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("metadata with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if !strings.Contains(err.Error(), "Authentication failed: Invalid username or password") {
		t.Errorf("error %q lacks Kafka's message", err)
	}
	waitFor(t, "the failed authentication counted", func() bool {
		return saslCounter(b.metrics.failedAuthentications) >= 1
	})
}

// TestSASLPlainLibrdkafkaProduceConsume: librdkafka (confluent-kafka-go)
// authenticates with PLAIN, produces and consumes.
func TestSASLPlainLibrdkafkaProduceConsume(t *testing.T) {
	t.Parallel()
	b := startSASLBroker(t, nil)
	librdkafkaProduceConsume(t, kafka.ConfigMap{
		"bootstrap.servers": b.Addr(),
		"security.protocol": "SASL_PLAINTEXT",
		"sasl.mechanisms":   "PLAIN",
		"sasl.username":     "bob",
		"sasl.password":     "bob-secret",
		"log_level":         3,
	}, "sasl-librdkafka", nil)
}

// librdkafkaProduceConsume produces one record to topic and consumes it
// with librdkafka clients of the common configuration, then calls
// connected (if not nil) while both clients are still connected.
func librdkafkaProduceConsume(t *testing.T, common kafka.ConfigMap, topic string, connected func()) {
	t.Helper()
	pcfg := kafka.ConfigMap{}
	for k, v := range common {
		pcfg[k] = v
	}
	p, err := kafka.NewProducer(&pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	delivery := make(chan kafka.Event, 1)
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny}, Value: []byte("rd")}, delivery)
		if err != nil {
			t.Fatal(err)
		}
		m := (<-delivery).(*kafka.Message)
		if m.TopicPartition.Error == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("produce: %v", m.TopicPartition.Error)
		}
		time.Sleep(100 * time.Millisecond) // the auto-created topic may not be led yet
	}
	ccfg := kafka.ConfigMap{"group.id": topic + "-group", "auto.offset.reset": "earliest"}
	for k, v := range common {
		ccfg[k] = v
	}
	c, err := kafka.NewConsumer(&ccfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatal(err)
	}
	for time.Now().Before(deadline.Add(10 * time.Second)) {
		m, err := c.ReadMessage(time.Second)
		if err == nil {
			if string(m.Value) != "rd" {
				t.Fatalf("consumed %q", m.Value)
			}
			if connected != nil {
				connected()
			}
			return
		}
		if ke, ok := err.(kafka.Error); ok && ke.Code() == kafka.ErrTimedOut {
			continue
		}
		t.Fatalf("consume: %v", err)
	}
	t.Fatal("consumed nothing")
}

// saslRaw is a raw connection to a SASL listener.
type saslRaw struct{ *rawConn }

func dialSASL(t *testing.T, b *Broker) saslRaw { return saslRaw{dialRaw(t, b.Addr())} }

func (c saslRaw) handshake(version int16, mechanism string) *kmsg.SASLHandshakeResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = version, mechanism
	return c.do(req).(*kmsg.SASLHandshakeResponse)
}

func (c saslRaw) authenticate(version int16, user, pass string) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version = version
	req.SASLAuthBytes = []byte("\x00" + user + "\x00" + pass)
	return c.do(req).(*kmsg.SASLAuthenticateResponse)
}

// expectClosedUnanswered checks that the broker closes the connection
// without writing anything.
func (c saslRaw) expectClosedUnanswered() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, err := c.nc.Read(buf)
	switch {
	case n > 0:
		c.t.Fatalf("the broker answered %d bytes, want the connection closed unanswered", n)
	case err == io.EOF || errors.Is(err, syscall.ECONNRESET):
	default:
		c.t.Fatalf("read: %v, want the connection closed", err)
	}
}

func metadataRequest() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	return req
}

// TestSASLRawExchanges drives the listener with raw frames, each case as
// Kafka 4.4 answers it.
func TestSASLRawExchanges(t *testing.T) {
	t.Parallel()
	delay := int64(150)
	b := startSASLBroker(t, func(c *Config) { c.FailedAuthenticationDelayMs = &delay })

	t.Run("metadata before authenticating closes unanswered", func(t *testing.T) {
		c := dialSASL(t, b)
		start := time.Now()
		c.sendRefused(metadataRequest())
		c.expectClosedUnanswered()
		if d := time.Since(start); d >= time.Duration(delay)*time.Millisecond {
			t.Errorf("closed after %v: an invalid request closes at once, without the failed authentication delay", d)
		}
	})

	t.Run("api versions then v1 handshake and authenticate", func(t *testing.T) {
		c := dialSASL(t, b)
		av := kmsg.NewPtrApiVersionsRequest()
		av.Version, av.ClientSoftwareName, av.ClientSoftwareVersion = 3, "raw", "1"
		avr := c.do(av).(*kmsg.ApiVersionsResponse)
		if avr.ErrorCode != 0 {
			t.Fatalf("ApiVersions error %d", avr.ErrorCode)
		}
		keys := map[int16]kmsg.ApiVersionsResponseApiKey{}
		for _, k := range avr.ApiKeys {
			keys[k.ApiKey] = k
		}
		if k := keys[17]; k.MaxVersion != 1 {
			t.Errorf("SaslHandshake advertised up to v%d, want v1", k.MaxVersion)
		}
		if k := keys[36]; k.MaxVersion != 2 {
			t.Errorf("SaslAuthenticate advertised up to v%d, want v2", k.MaxVersion)
		}
		hs := c.handshake(1, "PLAIN")
		if hs.ErrorCode != 0 || strings.Join(hs.SupportedMechanisms, ",") != "PLAIN" {
			t.Fatalf("handshake: error %d, mechanisms %q", hs.ErrorCode, hs.SupportedMechanisms)
		}
		ar := c.authenticate(2, "alice", "alice-secret")
		if ar.ErrorCode != 0 || ar.ErrorMessage != nil || ar.SessionLifetimeMillis != 0 {
			t.Fatalf("authenticate: %+v", ar)
		}
		if mr := c.do(metadataRequest()).(*kmsg.MetadataResponse); len(mr.Brokers) != 1 {
			t.Fatalf("metadata after authenticating: %d brokers", len(mr.Brokers))
		}
		// A further handshake or authenticate is refused by the broker,
		// as Kafka's KafkaApis (no session expiry: no re-authentication).
		if hs := c.handshake(1, "PLAIN"); hs.ErrorCode != kerr.IllegalSaslState.Code {
			t.Errorf("handshake after authentication: error %d, want ILLEGAL_SASL_STATE", hs.ErrorCode)
		}
		ar = c.authenticate(1, "alice", "alice-secret")
		if ar.ErrorCode != kerr.IllegalSaslState.Code || ar.ErrorMessage == nil ||
			*ar.ErrorMessage != "SaslAuthenticate request received after successful authentication" {
			t.Errorf("authenticate after authentication: %+v", ar)
		}
	})

	t.Run("v0 handshake with raw tokens", func(t *testing.T) {
		c := dialSASL(t, b)
		if hs := c.handshake(0, "PLAIN"); hs.ErrorCode != 0 {
			t.Fatalf("handshake v0: error %d", hs.ErrorCode)
		}
		token := []byte("\x00alice\x00alice-secret")
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(token)))
		if _, err := c.nc.Write(append(frame, token...)); err != nil {
			t.Fatal(err)
		}
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		reply, err := protocol.ReadFrame(c.nc, 1024, nil)
		if err != nil || len(reply) != 0 {
			t.Fatalf("raw challenge %q, %v: want an empty frame", reply, err)
		}
		if mr := c.do(metadataRequest()).(*kmsg.MetadataResponse); len(mr.Brokers) != 1 {
			t.Fatalf("metadata after a v0 authentication: %d brokers", len(mr.Brokers))
		}
	})

	t.Run("v0 handshake with a wrong password closes unanswered after the delay", func(t *testing.T) {
		c := dialSASL(t, b)
		c.handshake(0, "PLAIN")
		token := []byte("\x00alice\x00nope")
		start := time.Now()
		c.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...))
		c.expectClosedUnanswered()
		if d := time.Since(start); d < time.Duration(delay)*time.Millisecond {
			t.Errorf("closed after %v, before the %dms delay", d, delay)
		}
	})

	t.Run("wrong password answered after the delay, then closed", func(t *testing.T) {
		c := dialSASL(t, b)
		c.handshake(1, "PLAIN")
		start := time.Now()
		ar := c.authenticate(1, "alice", "bob-secret")
		if d := time.Since(start); d < time.Duration(delay)*time.Millisecond {
			t.Errorf("answered after %v, before the %dms delay", d, delay)
		}
		if ar.ErrorCode != kerr.SaslAuthenticationFailed.Code || ar.ErrorMessage == nil ||
			*ar.ErrorMessage != "Authentication failed: Invalid username or password" {
			t.Fatalf("wrong password: %+v", ar)
		}
		c.expectClosedUnanswered()
	})

	t.Run("unknown mechanism lists the enabled ones", func(t *testing.T) {
		c := dialSASL(t, b)
		hs := c.handshake(1, "SCRAM-SHA-512")
		if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(hs.SupportedMechanisms, ",") != "PLAIN" {
			t.Fatalf("unknown mechanism: error %d, mechanisms %q", hs.ErrorCode, hs.SupportedMechanisms)
		}
		c.expectClosedUnanswered()
	})

	t.Run("oversized token closes unanswered", func(t *testing.T) {
		c := dialSASL(t, b)
		c.handshake(1, "PLAIN")
		c.nc.Write(binary.BigEndian.AppendUint32(nil, 524289))
		c.expectClosedUnanswered()
	})

	t.Run("request other than SaslAuthenticate after the handshake", func(t *testing.T) {
		c := dialSASL(t, b)
		c.handshake(1, "PLAIN")
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey = 1, "g"
		resp := c.do(req).(*kmsg.FindCoordinatorResponse)
		if resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("FindCoordinator during authentication: error %d, want ILLEGAL_SASL_STATE", resp.ErrorCode)
		}
		c.expectClosedUnanswered()
	})
}

// TestSASLSessionExpiryAndReauthentication: with connections.max.reauth.ms
// the session lifetime is sent; a re-authentication as the same user
// goes on, as another user fails, and a session left to expire is closed
// at its next request, which goes unanswered.
func TestSASLSessionExpiryAndReauthentication(t *testing.T) {
	t.Parallel()
	b := startSASLBroker(t, func(c *Config) { c.ConnectionsMaxReauthMs = 300 })

	t.Run("expired session", func(t *testing.T) {
		c := dialSASL(t, b)
		c.handshake(1, "PLAIN")
		if ar := c.authenticate(1, "alice", "alice-secret"); ar.ErrorCode != 0 || ar.SessionLifetimeMillis != 300 {
			t.Fatalf("authenticate: %+v, want lifetime 300", ar)
		}
		c.do(metadataRequest())
		time.Sleep(400 * time.Millisecond)
		c.sendRefused(metadataRequest())
		c.expectClosedUnanswered()
		if n := saslCounter(b.metrics.expiredSessions); n < 1 {
			t.Errorf("expired sessions %v, want at least 1", n)
		}
	})

	t.Run("same principal", func(t *testing.T) {
		c := dialSASL(t, b)
		c.handshake(1, "PLAIN")
		c.authenticate(1, "alice", "alice-secret")
		if hs := c.handshake(1, "PLAIN"); hs.ErrorCode != 0 {
			t.Fatalf("re-authentication handshake: error %d", hs.ErrorCode)
		}
		if ar := c.authenticate(2, "alice", "alice-secret"); ar.ErrorCode != 0 || ar.SessionLifetimeMillis != 300 {
			t.Fatalf("re-authenticate: %+v", ar)
		}
		c.do(metadataRequest())
	})

	t.Run("other principal", func(t *testing.T) {
		c := dialSASL(t, b)
		c.handshake(1, "PLAIN")
		c.authenticate(1, "alice", "alice-secret")
		c.handshake(1, "PLAIN")
		ar := c.authenticate(1, "bob", "bob-secret")
		want := "Cannot change principals during re-authentication from User.alice: User.bob"
		if ar.ErrorCode != kerr.SaslAuthenticationFailed.Code || ar.ErrorMessage == nil || *ar.ErrorMessage != want {
			t.Fatalf("re-authenticate as bob: %+v, want %q", ar, want)
		}
		c.expectClosedUnanswered()
	})
}

// TestSASLFranzReauthenticates: franz-go re-authenticates before the
// session lifetime the broker sends runs out, so a client producing
// across several lifetimes never loses its connection.
func TestSASLFranzReauthenticates(t *testing.T) {
	t.Parallel()
	b := startSASLBroker(t, func(c *Config) { c.ConnectionsMaxReauthMs = 1500 })
	checkFranzReauthenticates(t, b, plainOpt("alice", "alice-secret"), "sasl-reauth")
}

// checkFranzReauthenticates produces with franz-go logged in by login for
// four seconds of 1.5 s sessions: two connections (metadata, produce)
// authenticate, and each at least once more, and no session expires.
func checkFranzReauthenticates(t *testing.T, b *Broker, login kgo.Opt, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), login, kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	end := time.Now().Add(4 * time.Second)
	for time.Now().Before(end) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := saslCounter(b.metrics.successfulAuthentications); n < 4 {
		t.Errorf("%v successful authentications, want re-authentications beyond the first two", n)
	}
	if n := saslCounter(b.metrics.expiredSessions); n != 0 {
		t.Errorf("%v sessions expired: the client should have re-authenticated", n)
	}
}

// TestSASLStartRefusals: a SASL listener needs a served mechanism and its
// users; SASL_SSL needs SSL settings; cluster mode serves no SASL yet.
func TestSASLStartRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		adjust func(*Config)
		want   string
	}{
		{"default mechanism GSSAPI", func(c *Config) { c.SASLEnabledMechanisms = nil }, "GSSAPI is not served yet"},
		{"bad add-scram", func(c *Config) {
			c.AddScram = []string{"SCRAM-SHA-512=[name=alice,password=alice-secret,iterations=100]"}
		},
			"The 'iterations' value must be >= 4096 for add-scram using SCRAM_SHA_512"},
		{"oauthbearer without jaas", func(c *Config) { c.SASLEnabledMechanisms = []string{"OAUTHBEARER"} }, "set listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"},
		{"oauthbearer with 3.x's secured validator name", func(c *Config) {
			c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
			c.OAuthBearer = OAuthBearerConfig{JAASConfig: oauthTestJAAS, ServerCallbackHandlerClass: "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"}
		}, "secured.OAuthBearerValidatorCallbackHandler is not served"},
		{"jwks validator without a url", func(c *Config) {
			c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
			c.OAuthBearer = OAuthBearerConfig{JAASConfig: oauthTestJAAS, ServerCallbackHandlerClass: jwksValidatorCallbackHandler}
		}, "sasl.oauthbearer.jwks.endpoint.url must be non-null"},
		{"jwks validator without jaas", func(c *Config) {
			c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
			c.OAuthBearer = OAuthBearerConfig{ServerCallbackHandlerClass: jwksValidatorCallbackHandler, JWKSEndpointURL: "file:///x", AllowedURLs: []string{"file:///x"}}
		}, "set listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"},
		{"jwks url not allowed", func(c *Config) {
			c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
			c.OAuthBearer = OAuthBearerConfig{JAASConfig: oauthTestJAAS, ServerCallbackHandlerClass: jwksValidatorCallbackHandler, JWKSEndpointURL: "http://127.0.0.1:1/jwks"}
		}, "http://127.0.0.1:1/jwks is not allowed. Update system property 'org.apache.kafka.sasl.oauthbearer.allowed.urls' to allow http://127.0.0.1:1/jwks"},
		{"jwks url another scheme", func(c *Config) {
			c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
			c.OAuthBearer = OAuthBearerConfig{JAASConfig: oauthTestJAAS, ServerCallbackHandlerClass: jwksValidatorCallbackHandler, JWKSEndpointURL: "ftp://h/jwks", AllowedURLs: []string{"ftp://h/jwks"}}
		}, "contains an invalid protocol (ftp)"},
		{"jwks file missing", func(c *Config) {
			c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
			c.OAuthBearer = OAuthBearerConfig{JAASConfig: oauthTestJAAS, ServerCallbackHandlerClass: jwksValidatorCallbackHandler, JWKSEndpointURL: "file:///nonexistent/jwks.json", AllowedURLs: []string{"file:///nonexistent/jwks.json"}}
		}, "contains a file (/nonexistent/jwks.json) that cannot be read"},
		{"jwks endpoint down", func(c *Config) {
			c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
			c.OAuthBearer = OAuthBearerConfig{JAASConfig: oauthTestJAAS, ServerCallbackHandlerClass: jwksValidatorCallbackHandler, JWKSEndpointURL: "http://127.0.0.1:1/jwks", AllowedURLs: []string{"http://127.0.0.1:1/jwks"}}
		}, "Could not refresh JWKS"},
		{"jwks negative skew", func(c *Config) {
			skew := int64(-1)
			c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
			c.OAuthBearer = OAuthBearerConfig{JAASConfig: oauthTestJAAS, ServerCallbackHandlerClass: jwksValidatorCallbackHandler, JWKSEndpointURL: "file:///x", AllowedURLs: []string{"file:///x"}, ClockSkewSeconds: &skew}
		}, "sasl.oauthbearer.clock.skew.seconds value must be non-negative"},
		{"oauthbearer with plain's module", func(c *Config) {
			c.SASLEnabledMechanisms = []string{"OAUTHBEARER"}
			c.OAuthBearer = OAuthBearerConfig{JAASConfig: saslTestJAAS}
		}, "is not org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"},
		{"gssapi", func(c *Config) { c.SASLEnabledMechanisms = []string{"GSSAPI"} }, "GSSAPI is not served yet"},
		{"unknown", func(c *Config) { c.SASLEnabledMechanisms = []string{"CRAM-MD5"} }, `unknown SASL mechanism "CRAM-MD5"`},
		{"none", func(c *Config) { c.SASLEnabledMechanisms = []string{} }, "No SASL mechanisms are enabled"},
		{"no jaas", func(c *Config) { c.SASLPlainJAASConfig = "" }, "Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry"},
		{"bad jaas", func(c *Config) { c.SASLPlainJAASConfig = "x required user_a=\"b\"" }, "JAAS config entry not terminated by semi-colon"},
		{"two modules", func(c *Config) { c.SASLPlainJAASConfig = "a required; b required;" }, "contains 2 login modules, should be 1 module"},
		{"ssl without settings", func(c *Config) { c.SecurityProtocol = "SASL_SSL" }, "has no SSL settings"},
		{"cluster mode, GSSAPI between nodes", func(c *Config) { c.ControllerQuorumVoters = "1@127.0.0.1:1" }, "sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zero := int64(0)
			cfg := Config{SecurityProtocol: "SASL_PLAINTEXT", SASLEnabledMechanisms: []string{"PLAIN"},
				SASLPlainJAASConfig: saslTestJAAS, GroupInitialRebalanceDelayMs: &zero}
			tc.adjust(&cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			b, err := Start(ctx, cfg)
			if err == nil {
				b.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "alice-secret") {
				t.Fatalf("error %q names a password", err)
			}
		})
	}
}
