package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// Security is the connection's security of the adapter contract
// (compat-tests/README.md): COMPAT_SECURITY_PROTOCOL, COMPAT_SASL_* and
// COMPAT_SSL_*. Each client turns it into its own settings; a client that
// cannot express it answers not applicable, never plaintext.
type Security struct {
	Protocol  string // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
	Mechanism string // SASL mechanism, e.g. SCRAM-SHA-512
	Username  string
	Password  string
	CAFile    string // PEM, the CA that signed the broker's certificate
	CertFile  string // PEM client certificate (mTLS), or ""
	KeyFile   string // PEM client key (mTLS), or ""
	TLS       *tls.Config
}

// UsesTLS reports whether the connection is TLS.
func (s *Security) UsesTLS() bool { return s.Protocol == "SSL" || s.Protocol == "SASL_SSL" }

// UsesSASL reports whether the connection logs in with SASL.
func (s *Security) UsesSASL() bool { return s.Protocol == "SASL_PLAINTEXT" || s.Protocol == "SASL_SSL" }

// sec is the run's security, read once by main from the environment.
var sec = &Security{Protocol: "PLAINTEXT"}

// loadSecurity reads the contract's variables and builds the tls.Config
// (the CA as the only root, the client certificate for mTLS).
func loadSecurity() (*Security, error) {
	s := &Security{
		Protocol:  os.Getenv("COMPAT_SECURITY_PROTOCOL"),
		Mechanism: os.Getenv("COMPAT_SASL_MECHANISM"),
		Username:  os.Getenv("COMPAT_SASL_USERNAME"),
		Password:  os.Getenv("COMPAT_SASL_PASSWORD"),
		CAFile:    os.Getenv("COMPAT_SSL_CA"),
		CertFile:  os.Getenv("COMPAT_SSL_CERT"),
		KeyFile:   os.Getenv("COMPAT_SSL_KEY"),
	}
	switch s.Protocol {
	case "":
		s.Protocol = "PLAINTEXT"
	case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return nil, fmt.Errorf("COMPAT_SECURITY_PROTOCOL=%q: not a Kafka security protocol", s.Protocol)
	}
	if s.UsesSASL() && (s.Mechanism == "" || s.Username == "") {
		return nil, fmt.Errorf("COMPAT_SECURITY_PROTOCOL=%s needs COMPAT_SASL_MECHANISM and COMPAT_SASL_USERNAME", s.Protocol)
	}
	if !s.UsesTLS() {
		return s, nil
	}
	if s.CAFile == "" {
		return nil, fmt.Errorf("COMPAT_SECURITY_PROTOCOL=%s needs COMPAT_SSL_CA", s.Protocol)
	}
	ca, err := os.ReadFile(s.CAFile)
	if err != nil {
		return nil, fmt.Errorf("COMPAT_SSL_CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("COMPAT_SSL_CA %s: no PEM certificate", s.CAFile)
	}
	s.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return nil, fmt.Errorf("COMPAT_SSL_CERT and COMPAT_SSL_KEY go together")
	}
	if s.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("COMPAT_SSL_CERT/COMPAT_SSL_KEY: %w", err)
		}
		s.TLS.Certificates = []tls.Certificate{pair}
	}
	return s, nil
}

// tlsConfig is a copy of the TLS settings (nil without TLS).
func (s *Security) tlsConfig() *tls.Config {
	if s.TLS == nil {
		return nil
	}
	return s.TLS.Clone()
}
