package ssl

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// Secret is a password or an inline PEM key, as Kafka's Password type: its
// String hides the value.
type Secret struct{ value *string }

// NewSecret wraps v.
func NewSecret(v string) Secret { return Secret{&v} }

// Set reports whether the secret was given.
func (s Secret) Set() bool { return s.value != nil }

// Value is the secret itself; never log it.
func (s Secret) Value() string {
	if s.value == nil {
		return ""
	}
	return *s.value
}

// String is Kafka's Password.toString.
func (s Secret) String() string { return "[hidden]" }

// GoString keeps %#v from printing the value too.
func (s Secret) GoString() string { return "ssl.Secret([hidden])" }

// Client authentication, ssl.client.auth (Kafka's SslClientAuth).
const (
	ClientAuthNone      = "none"
	ClientAuthRequested = "requested"
	ClientAuthRequired  = "required"
)

// Store types, ssl.keystore.type and ssl.truststore.type.
const (
	TypeJKS    = "JKS"
	TypePKCS12 = "PKCS12"
	TypePEM    = "PEM"
)

// Settings is one listener's ssl.* keys. The zero value is not valid: use
// Parse, which applies Kafka's defaults.
type Settings struct {
	Protocol         string   // ssl.protocol, default TLSv1.3
	EnabledProtocols []string // ssl.enabled.protocols, default TLSv1.2,TLSv1.3
	CipherSuites     []string // ssl.cipher.suites, default none (every suite)

	KeystoreType             string // ssl.keystore.type, default JKS
	KeystoreLocation         string // ssl.keystore.location
	KeystorePassword         Secret // ssl.keystore.password
	KeyPassword              Secret // ssl.key.password
	KeystoreKey              Secret // ssl.keystore.key (inline PEM)
	KeystoreCertificateChain Secret // ssl.keystore.certificate.chain (inline PEM)

	TruststoreType         string // ssl.truststore.type, default JKS
	TruststoreLocation     string // ssl.truststore.location
	TruststorePassword     Secret // ssl.truststore.password
	TruststoreCertificates Secret // ssl.truststore.certificates (inline PEM)

	ClientAuth string // ssl.client.auth, default none
	// EndpointIdentification is ssl.endpoint.identification.algorithm:
	// "https" (the default) checks a server's certificate against the host
	// dialled; "" does not.
	EndpointIdentification string
	AllowDNChanges         bool // ssl.allow.dn.changes
	AllowSANChanges        bool // ssl.allow.san.changes

	// Warnings are what Kafka logs and goes on from, such as an
	// unrecognized ssl.client.auth.
	Warnings []string
}

// Keys are the ssl.* keys Parse reads.
var Keys = []string{
	"ssl.protocol", "ssl.enabled.protocols", "ssl.cipher.suites", "ssl.provider",
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.key", "ssl.keystore.certificate.chain",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
	"ssl.client.auth", "ssl.endpoint.identification.algorithm", "ssl.allow.dn.changes", "ssl.allow.san.changes",
	"ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
}

// Parse reads one listener's ssl.* keys through get (the listener's
// overrides already applied), with Kafka's defaults. A key given as the
// empty string is unset, as Kafka reads an empty password or list.
func Parse(get func(key string) (string, bool)) (Settings, error) {
	str := func(key, def string) string {
		if v, ok := get(key); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
		return def
	}
	secret := func(key string) Secret {
		if v, ok := get(key); ok && v != "" {
			return NewSecret(v)
		}
		return Secret{}
	}
	list := func(key, def string) []string {
		var out []string
		for _, v := range strings.Split(str(key, def), ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
		return out
	}
	boolean := func(key string) (bool, error) {
		switch v := strings.ToLower(str(key, "false")); v {
		case "true":
			return true, nil
		case "false":
			return false, nil
		default:
			return false, fmt.Errorf("Invalid value %s for configuration %s: Expected value to be either true or false", v, key)
		}
	}
	s := Settings{
		Protocol:                 str("ssl.protocol", "TLSv1.3"),
		EnabledProtocols:         list("ssl.enabled.protocols", "TLSv1.2,TLSv1.3"),
		CipherSuites:             list("ssl.cipher.suites", ""),
		KeystoreType:             str("ssl.keystore.type", TypeJKS),
		KeystoreLocation:         str("ssl.keystore.location", ""),
		KeystorePassword:         secret("ssl.keystore.password"),
		KeyPassword:              secret("ssl.key.password"),
		KeystoreKey:              secret("ssl.keystore.key"),
		KeystoreCertificateChain: secret("ssl.keystore.certificate.chain"),
		TruststoreType:           str("ssl.truststore.type", TypeJKS),
		TruststoreLocation:       str("ssl.truststore.location", ""),
		TruststorePassword:       secret("ssl.truststore.password"),
		TruststoreCertificates:   secret("ssl.truststore.certificates"),
		ClientAuth:               ClientAuthNone,
		EndpointIdentification:   "https",
	}
	if v, ok := get("ssl.endpoint.identification.algorithm"); ok {
		s.EndpointIdentification = strings.TrimSpace(v)
	}
	var err error
	if s.AllowDNChanges, err = boolean("ssl.allow.dn.changes"); err != nil {
		return Settings{}, err
	}
	if s.AllowSANChanges, err = boolean("ssl.allow.san.changes"); err != nil {
		return Settings{}, err
	}
	// SslClientAuth.forConfig: case-insensitive; anything else is logged
	// and taken as none.
	switch v := strings.ToLower(str("ssl.client.auth", ClientAuthNone)); v {
	case ClientAuthNone, ClientAuthRequested, ClientAuthRequired:
		s.ClientAuth = v
	default:
		s.Warnings = append(s.Warnings, fmt.Sprintf("Unrecognized client authentication configuration %s.  Falling back to NONE.  Recognized client authentication configurations are %s.",
			v, "REQUIRED, REQUESTED, NONE"))
	}
	if _, _, err := s.versions(); err != nil {
		return Settings{}, err
	}
	if _, err := s.cipherSuites(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// protocolVersions are the names Java gives TLS versions.
var protocolVersions = map[string]uint16{
	"TLSv1":   tls.VersionTLS10,
	"TLSv1.1": tls.VersionTLS11,
	"TLSv1.2": tls.VersionTLS12,
	"TLSv1.3": tls.VersionTLS13,
}

// versions is the range of TLS versions s enables: from the lowest to the
// highest of ssl.enabled.protocols, capped by what the ssl.protocol
// context offers (a TLSv1.2 context has no TLS 1.3).
func (s Settings) versions() (lo, hi uint16, err error) {
	for _, p := range s.EnabledProtocols {
		v, ok := protocolVersions[p]
		if !ok {
			return 0, 0, fmt.Errorf("Invalid value %s for configuration ssl.enabled.protocols: unsupported protocol %s", strings.Join(s.EnabledProtocols, ","), p)
		}
		if lo == 0 || v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	if lo == 0 {
		return 0, 0, fmt.Errorf("Invalid value for configuration ssl.enabled.protocols: no protocol is enabled")
	}
	ctxMax := uint16(tls.VersionTLS13)
	switch s.Protocol {
	case "TLS", "TLSv1.3":
	case "TLSv1", "TLSv1.1", "TLSv1.2":
		ctxMax = protocolVersions[s.Protocol]
	default:
		return 0, 0, fmt.Errorf("Invalid value %s for configuration ssl.protocol: unsupported protocol", s.Protocol)
	}
	if hi > ctxMax {
		hi = ctxMax
	}
	if lo > hi {
		return 0, 0, fmt.Errorf("ssl.enabled.protocols %s has no protocol the %s context supports", strings.Join(s.EnabledProtocols, ","), s.Protocol)
	}
	return lo, hi, nil
}

// cipherSuites maps ssl.cipher.suites (IANA names, as Java names them) to
// Go's ids; nil means Go's defaults. TLS 1.3 suites are accepted and
// always on.
func (s Settings) cipherSuites() ([]uint16, error) {
	if len(s.CipherSuites) == 0 {
		return nil, nil
	}
	byName := map[string]uint16{}
	tls13 := map[string]bool{}
	for _, c := range tls.CipherSuites() {
		byName[c.Name] = c.ID
		for _, v := range c.SupportedVersions {
			if v == tls.VersionTLS13 {
				tls13[c.Name] = true
			}
		}
	}
	for _, c := range tls.InsecureCipherSuites() {
		byName[c.Name] = c.ID
	}
	var out []uint16
	for _, n := range s.CipherSuites {
		id, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("Invalid value %s for configuration ssl.cipher.suites: unsupported cipher suite %s", strings.Join(s.CipherSuites, ","), n)
		}
		if !tls13[n] {
			out = append(out, id)
		}
	}
	return out, nil
}

// Get is the value of one of Parse's keys in s, false when unset, so that
// Parse(s.Get) gives back s (its Warnings aside). A caller overriding some
// keys, such as the broker's dynamic listener configs, parses through it.
func (s Settings) Get(key string) (string, bool) {
	secret := func(v Secret) (string, bool) { return v.Value(), v.Set() }
	switch key {
	case "ssl.protocol":
		return s.Protocol, true
	case "ssl.enabled.protocols":
		return strings.Join(s.EnabledProtocols, ","), true
	case "ssl.cipher.suites":
		return strings.Join(s.CipherSuites, ","), len(s.CipherSuites) > 0
	case "ssl.keystore.type":
		return s.KeystoreType, true
	case "ssl.keystore.location":
		return s.KeystoreLocation, s.KeystoreLocation != ""
	case "ssl.keystore.password":
		return secret(s.KeystorePassword)
	case "ssl.key.password":
		return secret(s.KeyPassword)
	case "ssl.keystore.key":
		return secret(s.KeystoreKey)
	case "ssl.keystore.certificate.chain":
		return secret(s.KeystoreCertificateChain)
	case "ssl.truststore.type":
		return s.TruststoreType, true
	case "ssl.truststore.location":
		return s.TruststoreLocation, s.TruststoreLocation != ""
	case "ssl.truststore.password":
		return secret(s.TruststorePassword)
	case "ssl.truststore.certificates":
		return secret(s.TruststoreCertificates)
	case "ssl.client.auth":
		return s.ClientAuth, true
	case "ssl.endpoint.identification.algorithm":
		return s.EndpointIdentification, true
	case "ssl.allow.dn.changes":
		return fmt.Sprint(s.AllowDNChanges), true
	case "ssl.allow.san.changes":
		return fmt.Sprint(s.AllowSANChanges), true
	}
	return "", false
}

// ReconfigurableKeys are the ssl.* keys Kafka changes at run time
// (SslConfigs.RECONFIGURABLE_CONFIGS): the stores and their passwords.
var ReconfigurableKeys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.key", "ssl.keystore.certificate.chain",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
}

// SensitiveKeys are the ssl.* keys of Kafka's PASSWORD type, never shown.
var SensitiveKeys = []string{
	"ssl.keystore.password", "ssl.key.password", "ssl.keystore.key", "ssl.keystore.certificate.chain",
	"ssl.truststore.password", "ssl.truststore.certificates",
}
