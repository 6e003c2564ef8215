package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// brokerAddr is how the bench's clients reach a broker: its bootstrap
// servers and, over TLS, the client TLS config and the Java tools'
// client properties.
type brokerAddr struct {
	bootstrap string
	tls       *tls.Config
	// clientProps are the Java clients' security settings, key=value;
	// empty for PLAINTEXT.
	clientProps []string
}

// plain is a PLAINTEXT broker at bootstrap.
func plain(bootstrap string) brokerAddr { return brokerAddr{bootstrap: bootstrap} }

// opts are the franz-go options that reach the broker.
func (a brokerAddr) opts(more ...kgo.Opt) []kgo.Opt {
	o := []kgo.Opt{kgo.SeedBrokers(seeds(a.bootstrap)...)}
	if a.tls != nil {
		o = append(o, kgo.DialTLSConfig(a.tls.Clone()))
	}
	return append(o, more...)
}

// benchTLS is the tls mode's key material: a CA made for the run and a
// broker certificate it signs for 127.0.0.1, in PEM files both brokers
// read the same way (ssl.keystore.type=PEM, ssl.truststore.type=PEM).
type benchTLS struct {
	keystore   string // the broker's PKCS#8 key and certificate chain
	truststore string // the CA certificate
	client     *tls.Config
}

// newBenchTLS writes the key material into dir.
func newBenchTLS(dir string) (*benchTLS, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gregor-bench CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames: []string{"localhost"}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	t := &benchTLS{keystore: filepath.Join(dir, "bench-keystore.pem"), truststore: filepath.Join(dir, "bench-ca.pem")}
	keystore := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})...)
	if err := os.WriteFile(t.keystore, keystore, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(t.truststore, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	t.client = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	return t, nil
}

// brokerProps are the server.properties keys of an SSL listener with the
// run's certificate, the same for Gregor and Kafka.
func (t *benchTLS) brokerProps() []string {
	return []string{"ssl.keystore.type=PEM", "ssl.keystore.location=" + t.keystore,
		"ssl.truststore.type=PEM", "ssl.truststore.location=" + t.truststore}
}

// addr is a TLS broker at bootstrap.
func (t *benchTLS) addr(bootstrap string) brokerAddr {
	return brokerAddr{bootstrap: bootstrap, tls: t.client, clientProps: []string{"security.protocol=SSL",
		"ssl.truststore.type=PEM", "ssl.truststore.location=" + t.truststore}}
}

// writeProps writes key=value lines into path.
func writeProps(path string, props []string) error {
	var b []byte
	for _, p := range props {
		b = fmt.Appendf(b, "%s\n", p)
	}
	return os.WriteFile(path, b, 0o600)
}
