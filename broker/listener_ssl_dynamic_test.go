package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// keystoreFile writes c as a PEM key store (key, then chain).
func keystoreFile(t *testing.T, p *testPKI, name string, c testCert) string {
	t.Helper()
	k, _ := os.ReadFile(c.keyFile)
	crt, _ := os.ReadFile(c.certFile)
	return writePEM(t, p.dir, name, append(k, crt...))
}

// servedSerial is the serial number of the certificate a new connection
// to b sees.
func servedSerial(t *testing.T, b *Broker, p *testPKI) string {
	t.Helper()
	c, err := tls.Dial("tcp", b.Addr(), p.clientTLS())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func serialOf(t *testing.T, c testCert) string {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.tls.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.SerialNumber.String()
}

// TestDynamicListenerKeystore replaces the SSL listener's key store at run
// time through kadm: new connections see the new certificate, an open one
// goes on; a store with another DN, validateOnly, the cluster default and
// an unprefixed key change nothing; an AlterConfigs of the same path
// reloads a file replaced in place; the PEM key is never shown.
func TestDynamicListenerKeystore(t *testing.T) {
	p := newTestPKI(t)
	b := startTLSBroker(t, p, "none", nil)
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DialTLSConfig(p.clientTLS()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	id := b.cfg.NodeID
	const locKey = "listener.name.ssl.ssl.keystore.location"

	a := servedSerial(t, b, p)
	open, err := dialTLS(t, b, p.clientTLS())
	if err != nil {
		t.Fatal(err)
	}
	if err := tlsAPIVersions(open); err != nil {
		t.Fatal(err)
	}
	certB := p.issue(t, "server-b", pkix.Name{CommonName: "localhost"}, x509.ExtKeyUsageServerAuth)
	storeB := keystoreFile(t, p, "keystore-b.pem", certB)
	other := p.issue(t, "server-other", pkix.Name{CommonName: "other"}, x509.ExtKeyUsageServerAuth)
	storeOther := keystoreFile(t, p, "keystore-other.pem", other)

	alter := func(validate bool, name string, value *string, op kadm.IncrementalOp, broker ...int32) (string, error) {
		t.Helper()
		cfgs := []kadm.AlterConfig{{Op: op, Name: name, Value: value}}
		var rs kadm.AlterConfigsResponses
		var err error
		if validate {
			rs, err = adm.ValidateAlterBrokerConfigs(ctx, cfgs, broker...)
		} else {
			rs, err = adm.AlterBrokerConfigs(ctx, cfgs, broker...)
		}
		if err != nil {
			t.Fatalf("alter: %v", err)
		}
		return rs[0].ErrMessage, rs[0].Err
	}
	str := func(s string) *string { return &s }

	// validateOnly checks and changes nothing.
	if msg, err := alter(true, locKey, str(storeB), kadm.SetConfig, id); err != nil {
		t.Fatalf("validateOnly: %v %s", err, msg)
	}
	if got := servedSerial(t, b, p); got != a {
		t.Fatalf("after validateOnly the served certificate is %s, want the first %s", got, a)
	}

	// Refusals, the first certificate still served.
	refusals := []struct {
		name, key, value string
		validate         bool
		cluster          bool
		want             error
		msg              string
	}{
		{"another DN", locKey, storeOther, false, false, kerr.InvalidConfig, "Keystore DistinguishedName does not match"},
		{"another DN, validateOnly", locKey, storeOther, true, false, kerr.InvalidConfig, "Keystore DistinguishedName does not match"},
		{"missing file", locKey, p.dir + "/none.pem", false, false, kerr.InvalidConfig, "Validation of dynamic config update of SSLFactory failed"},
		{"cluster default", locKey, storeB, false, true, kerr.InvalidRequest, "Cannot update these configs at default cluster level, broker id must be specified: Set(" + locKey + ")"},
		{"no listener prefix", "ssl.keystore.location", storeB, false, false, kerr.InvalidRequest, "These security configs can be dynamically updated only per-listener using the listener prefix: Set(ssl.keystore.location)"},
	}
	for _, tc := range refusals {
		var brokers []int32
		if !tc.cluster {
			brokers = []int32{id}
		}
		msg, err := alter(tc.validate, tc.key, str(tc.value), kadm.SetConfig, brokers...)
		if !errors.Is(err, tc.want) || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: got %v %q, want %v containing %q", tc.name, err, msg, tc.want, tc.msg)
		}
		if got := servedSerial(t, b, p); got != a {
			t.Errorf("%s: the served certificate is %s, want the first %s", tc.name, got, a)
		}
	}

	// Cert B, same DN: new connections see it, the open one goes on.
	if msg, err := alter(false, locKey, str(storeB), kadm.SetConfig, id); err != nil {
		t.Fatalf("alter to B: %v %s", err, msg)
	}
	if got, want := servedSerial(t, b, p), serialOf(t, certB); got != want {
		t.Fatalf("served %s after the change, want B %s", got, want)
	}
	if err := tlsAPIVersions(open); err != nil {
		t.Fatalf("the connection opened before the change: %v", err)
	}

	// The file replaced in place; a legacy AlterConfigs of the same path
	// reloads it.
	certC := p.issue(t, "server-c", pkix.Name{CommonName: "localhost"}, x509.ExtKeyUsageServerAuth)
	k, _ := os.ReadFile(certC.keyFile)
	crt, _ := os.ReadFile(certC.certFile)
	if err := os.WriteFile(storeB, append(k, crt...), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(storeB, later, later); err != nil {
		t.Fatal(err)
	}
	if got, want := servedSerial(t, b, p), serialOf(t, certB); got != want {
		t.Fatalf("before the AlterConfigs the replaced file is served already (%s), want B %s", got, want)
	}
	legacy := kmsg.NewPtrAlterConfigsRequest()
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(id))
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = locKey, str(storeB)
	res.Configs = append(res.Configs, c)
	legacy.Resources = append(legacy.Resources, res)
	lr, err := legacy.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := lr.Resources[0].ErrorCode; code != 0 {
		t.Fatalf("legacy AlterConfigs: %v", kerr.ErrorForCode(code))
	}
	if got, want := servedSerial(t, b, p), serialOf(t, certC); got != want {
		t.Fatalf("after the AlterConfigs of the same path served %s, want C %s", got, want)
	}

	// An inline PEM key store: DescribeConfigs hides the key, shows the
	// type, source DYNAMIC_BROKER_CONFIG.
	kD := p.issue(t, "server-d", pkix.Name{CommonName: "localhost"}, x509.ExtKeyUsageServerAuth)
	keyPEM, _ := os.ReadFile(kD.keyFile)
	chainPEM, _ := os.ReadFile(kD.certFile)
	rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		// Empty, as Kafka reads it: unset, over the static location.
		{Op: kadm.SetConfig, Name: locKey, Value: str("")},
		{Op: kadm.SetConfig, Name: "listener.name.ssl.ssl.keystore.key", Value: str(string(keyPEM))},
		{Op: kadm.SetConfig, Name: "listener.name.ssl.ssl.keystore.certificate.chain", Value: str(string(chainPEM))},
	}, id)
	if err != nil || rs[0].Err != nil {
		t.Fatalf("inline PEM: %v %v %s", err, rs[0].Err, rs[0].ErrMessage)
	}
	if got, want := servedSerial(t, b, p), serialOf(t, kD); got != want {
		t.Fatalf("after the inline PEM served %s, want D %s", got, want)
	}
	drs, err := adm.DescribeBrokerConfigs(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := drs.On(strconv.Itoa(int(id)), nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, cfg := range rc.Configs {
		if !strings.HasPrefix(cfg.Key, "listener.name.ssl.") {
			continue
		}
		seen[cfg.Key] = true
		if cfg.Source != kmsg.ConfigSourceDynamicBrokerConfig {
			t.Errorf("%s: source %v, want DYNAMIC_BROKER_CONFIG", cfg.Key, cfg.Source)
		}
		if cfg.Key == locKey {
			if cfg.Value == nil || *cfg.Value != "" || cfg.Sensitive {
				t.Errorf("%s: value %v sensitive %v, want the empty string shown", cfg.Key, cfg.Value, cfg.Sensitive)
			}
			continue
		}
		if cfg.Value != nil && strings.Contains(*cfg.Value, "PRIVATE KEY") || !cfg.Sensitive {
			t.Errorf("%s: value %v sensitive %v, want null and sensitive", cfg.Key, cfg.Value, cfg.Sensitive)
		}
		for _, s := range cfg.Synonyms {
			if s.Value != nil {
				t.Errorf("%s: synonym %s shows a value", cfg.Key, s.Key)
			}
		}
	}
	for _, k := range []string{locKey, "listener.name.ssl.ssl.keystore.key", "listener.name.ssl.ssl.keystore.certificate.chain"} {
		if !seen[k] {
			t.Errorf("DescribeConfigs has no %s", k)
		}
	}
}
