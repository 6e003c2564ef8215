package ssl

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/youmark/pkcs8"
	"software.sslmate.com/src/go-pkcs12"
)

// keyEntry is one private key entry of a key store: its alias (Kafka's
// PEM store names its one entry "kafka") and its certificate chain, leaf
// first.
type keyEntry struct {
	alias string
	cert  tls.Certificate
}

// keyStore is a loaded key store, and the file it came from with its
// modification time (Kafka's FileBasedStore.modified).
type keyStore struct {
	entries  []keyEntry
	location string
	modTime  time.Time
}

// trustStore is a loaded trust store.
type trustStore struct {
	certs    []*x509.Certificate
	location string
	modTime  time.Time
}

// pool is the trust store as a CertPool.
func (t *trustStore) pool() *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range t.certs {
		p.AddCert(c)
	}
	return p
}

// loadKeyStore loads the key store s names, nil when it names none, with
// DefaultSslEngineFactory.createKeystore's checks in its order.
func loadKeyStore(s Settings) (*keyStore, error) {
	if s.KeystoreKey.Set() {
		if s.KeystoreType != TypePEM {
			return nil, fmt.Errorf("SSL private key can be specified only for PEM, but key store type is %s.", s.KeystoreType)
		}
		if !s.KeystoreCertificateChain.Set() {
			return nil, errors.New("SSL private key is specified, but certificate chain is not specified.")
		}
		if s.KeystoreLocation != "" {
			return nil, errors.New("Both SSL key store location and separate private key are specified.")
		}
		if s.KeystorePassword.Set() {
			return nil, errors.New("SSL key store password cannot be specified with PEM format, only key password may be specified.")
		}
		e, err := pemKeyEntry([]byte(s.KeystoreCertificateChain.Value()), []byte(s.KeystoreKey.Value()), s.KeyPassword)
		if err != nil {
			return nil, err
		}
		return &keyStore{entries: []keyEntry{e}}, nil
	}
	if s.KeystoreCertificateChain.Set() {
		return nil, errors.New("SSL certificate chain is specified, but private key is not specified")
	}
	if s.KeystoreType == TypePEM && s.KeystoreLocation != "" {
		if s.KeystorePassword.Set() {
			return nil, errors.New("SSL key store password cannot be specified with PEM format, only key password may be specified")
		}
		data, mod, err := readStore(s.KeystoreLocation)
		if err != nil {
			return nil, err
		}
		e, err := pemKeyEntry(data, data, s.KeyPassword)
		if err != nil {
			return nil, err
		}
		return &keyStore{entries: []keyEntry{e}, location: s.KeystoreLocation, modTime: mod}, nil
	}
	if s.KeystoreLocation == "" && s.KeystorePassword.Set() {
		return nil, errors.New("SSL key store is not specified, but key store password is specified.")
	}
	if s.KeystoreLocation != "" && !s.KeystorePassword.Set() {
		return nil, errors.New("SSL key store is specified, but key store password is not specified.")
	}
	if s.KeystoreLocation == "" {
		return nil, nil
	}
	data, mod, err := readStore(s.KeystoreLocation)
	if err != nil {
		return nil, err
	}
	keyPassword := s.KeystorePassword
	if s.KeyPassword.Set() {
		keyPassword = s.KeyPassword
	}
	entries, err := fileKeyEntries(s.KeystoreType, data, s.KeystorePassword, keyPassword)
	if err != nil {
		return nil, fmt.Errorf("Failed to load SSL keystore %s of type %s: %v", s.KeystoreLocation, s.KeystoreType, err)
	}
	return &keyStore{entries: entries, location: s.KeystoreLocation, modTime: mod}, nil
}

// loadTrustStore loads the trust store s names, nil when it names none,
// with DefaultSslEngineFactory.createTruststore's checks in its order.
func loadTrustStore(s Settings) (*trustStore, error) {
	if s.TruststoreCertificates.Set() {
		if s.TruststoreType != TypePEM {
			return nil, fmt.Errorf("SSL trust store certs can be specified only for PEM, but trust store type is %s.", s.TruststoreType)
		}
		if s.TruststoreLocation != "" {
			return nil, errors.New("Both SSL trust store location and separate trust certificates are specified.")
		}
		if s.TruststorePassword.Set() {
			return nil, errors.New("SSL trust store password cannot be specified for PEM format.")
		}
		certs, err := pemCertificates([]byte(s.TruststoreCertificates.Value()))
		if err != nil {
			return nil, fmt.Errorf("Invalid PEM truststore configs: %v", err)
		}
		return &trustStore{certs: certs}, nil
	}
	if s.TruststoreType == TypePEM && s.TruststoreLocation != "" {
		if s.TruststorePassword.Set() {
			return nil, errors.New("SSL trust store password cannot be specified for PEM format.")
		}
		data, mod, err := readStore(s.TruststoreLocation)
		if err != nil {
			return nil, err
		}
		certs, err := pemCertificates(data)
		if err != nil {
			return nil, fmt.Errorf("Invalid PEM truststore configs: %v", err)
		}
		return &trustStore{certs: certs, location: s.TruststoreLocation, modTime: mod}, nil
	}
	if s.TruststoreLocation == "" && s.TruststorePassword.Set() {
		return nil, errors.New("SSL trust store is not specified, but trust store password is specified.")
	}
	if s.TruststoreLocation == "" {
		return nil, nil
	}
	data, mod, err := readStore(s.TruststoreLocation)
	if err != nil {
		return nil, err
	}
	certs, err := fileTrustedCerts(s.TruststoreType, data, s.TruststorePassword)
	if err != nil {
		return nil, fmt.Errorf("Failed to load SSL keystore %s of type %s: %v", s.TruststoreLocation, s.TruststoreType, err)
	}
	return &trustStore{certs: certs, location: s.TruststoreLocation, modTime: mod}, nil
}

// maxStoreBytes bounds a store file read: stores are a few kilobytes.
const maxStoreBytes = 16 << 20

func readStore(path string) ([]byte, time.Time, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("Failed to load SSL keystore %s: %v", path, err)
	}
	if fi.Size() > maxStoreBytes {
		return nil, time.Time{}, fmt.Errorf("Failed to load SSL keystore %s: %d bytes is larger than a store can be", path, fi.Size())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("Failed to load SSL keystore %s: %v", path, err)
	}
	return data, fi.ModTime(), nil
}

// jksMagic starts a JKS file.
const jksMagic = 0xfeedfeed

// isJKS reports whether data is a JKS store. Java's JKS and PKCS12
// KeyStores read either format (keystore.type.compat), so the bytes, not
// the configured type, say how to read a file store.
func isJKS(data []byte) bool {
	return len(data) >= 4 && binary.BigEndian.Uint32(data) == jksMagic
}

func checkFileStoreType(typ string) error {
	if typ != TypeJKS && typ != TypePKCS12 {
		return fmt.Errorf("%s not found", typ) // Java's KeyStoreException for an unknown type
	}
	return nil
}

// fileKeyEntries reads the private key entries of a JKS or PKCS12 store.
func fileKeyEntries(typ string, data []byte, storePassword, keyPassword Secret) ([]keyEntry, error) {
	if err := checkFileStoreType(typ); err != nil {
		return nil, err
	}
	if isJKS(data) {
		if err := walkJKS(data, nil); err != nil {
			return nil, err
		}
		ks := keystore.New(keystore.WithOrderedAliases(), keystore.WithMinPasswordLen(0))
		if err := ks.Load(bytes.NewReader(data), []byte(storePassword.Value())); err != nil {
			return nil, errors.New("keystore password was incorrect or the store is damaged")
		}
		var out []keyEntry
		for _, alias := range ks.Aliases() {
			if !ks.IsPrivateKeyEntry(alias) {
				continue
			}
			e, err := ks.GetPrivateKeyEntry(alias, []byte(keyPassword.Value()))
			if err != nil {
				return nil, fmt.Errorf("cannot recover the key of entry %s: the key password was incorrect", alias)
			}
			key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
			if err != nil {
				return nil, fmt.Errorf("entry %s: %v", alias, err)
			}
			var chain [][]byte
			for _, c := range e.CertificateChain {
				chain = append(chain, c.Content)
			}
			cert, err := certificate(chain, key)
			if err != nil {
				return nil, fmt.Errorf("entry %s: %v", alias, err)
			}
			out = append(out, keyEntry{alias: alias, cert: cert})
		}
		if len(out) == 0 {
			return nil, errors.New("the store holds no private key entry")
		}
		return out, nil
	}
	key, leaf, cas, err := pkcs12.DecodeChain(data, storePassword.Value())
	if err != nil {
		return nil, errors.New("keystore password was incorrect or the store is damaged")
	}
	chain := [][]byte{leaf.Raw}
	for _, c := range cas {
		chain = append(chain, c.Raw)
	}
	cert, err := certificate(chain, key)
	if err != nil {
		return nil, err
	}
	return []keyEntry{{alias: "1", cert: cert}}, nil
}

// fileTrustedCerts reads the trusted certificate entries of a JKS or
// PKCS12 store. A JKS store given no password is read without checking its
// integrity, as Java's KeyStore.load(in, null) does.
func fileTrustedCerts(typ string, data []byte, password Secret) ([]*x509.Certificate, error) {
	if err := checkFileStoreType(typ); err != nil {
		return nil, err
	}
	if isJKS(data) && !password.Set() {
		return jksCertificatesUnchecked(data)
	}
	if isJKS(data) {
		if err := walkJKS(data, nil); err != nil {
			return nil, err
		}
		ks := keystore.New(keystore.WithOrderedAliases(), keystore.WithMinPasswordLen(0))
		if err := ks.Load(bytes.NewReader(data), []byte(password.Value())); err != nil {
			return nil, errors.New("truststore password was incorrect or the store is damaged")
		}
		var out []*x509.Certificate
		for _, alias := range ks.Aliases() {
			var raw [][]byte
			switch {
			case ks.IsTrustedCertificateEntry(alias):
				e, err := ks.GetTrustedCertificateEntry(alias)
				if err != nil {
					return nil, err
				}
				raw = [][]byte{e.Certificate.Content}
			case ks.IsPrivateKeyEntry(alias):
				// Java's trust manager trusts a key entry's leaf too.
				chain, err := ks.GetPrivateKeyEntryCertificateChain(alias)
				if err != nil || len(chain) == 0 {
					continue
				}
				raw = [][]byte{chain[0].Content}
			}
			for _, r := range raw {
				c, err := x509.ParseCertificate(r)
				if err != nil {
					return nil, fmt.Errorf("entry %s: %v", alias, err)
				}
				out = append(out, c)
			}
		}
		return out, nil
	}
	certs, err := pkcs12.DecodeTrustStore(data, password.Value())
	if err != nil {
		return nil, errors.New("truststore password was incorrect or the store is damaged")
	}
	return certs, nil
}

// jksCertificatesUnchecked reads the trusted certificate entries of a JKS
// store without checking its integrity, which needs the password: Java's
// KeyStore.load(in, null), what Kafka does for a trust store given no
// ssl.truststore.password. Key entries are skipped.
func jksCertificatesUnchecked(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	err := walkJKS(data, func(alias string, der []byte) error {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return fmt.Errorf("entry %s: %v", alias, err)
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

// walkJKS checks the structure of a JKS store, calling trusted with each
// trusted certificate entry. Every length is checked against the bytes
// left, so a damaged store is refused before the JKS decoder, which
// allocates the lengths it reads, sees it.
func walkJKS(data []byte, trusted func(alias string, der []byte) error) error {
	r := jksReader{b: data}
	if r.u32() != jksMagic {
		return errors.New("not a JKS store")
	}
	if v := r.u32(); v != 1 && v != 2 {
		return fmt.Errorf("JKS version %d", v)
	}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		tag := r.u32()
		alias := r.utf()
		r.skip(8) // creation time
		switch tag {
		case 1: // private key: protected key, then its chain
			r.skip(int(r.u32()))
			for c, chain := 0, int(r.u32()); c < chain && r.err == nil; c++ {
				r.utf()
				r.skip(int(r.u32()))
			}
		case 2: // trusted certificate
			r.utf()
			der := r.bytes(int(r.u32()))
			if r.err == nil && trusted != nil {
				if err := trusted(alias, der); err != nil {
					return err
				}
			}
		default:
			if r.err == nil {
				return fmt.Errorf("JKS entry %s has unknown tag %d", alias, tag)
			}
		}
	}
	if r.err == nil && len(r.b) != 20 { // the SHA-1 digest ends the store
		r.err = errors.New("the JKS store does not end with its digest")
	}
	return r.err
}

// jksReader reads a JKS store's big-endian fields, remembering the first
// error (a length past the end).
type jksReader struct {
	b   []byte
	err error
}

func (r *jksReader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = errors.New("the JKS store is truncated")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *jksReader) skip(n int) { r.bytes(n) }

func (r *jksReader) u32() uint32 {
	b := r.bytes(4)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

// utf reads Java's modified UTF-8 string: a 16-bit length, then bytes.
func (r *jksReader) utf() string {
	b := r.bytes(2)
	if b == nil {
		return ""
	}
	return string(r.bytes(int(binary.BigEndian.Uint16(b))))
}

// pemKeyEntry is Kafka's PemStore: the certificate chain from certPEM (at
// least one CERTIFICATE block) and the one PKCS#8 key from keyPEM, a
// PRIVATE KEY, or an ENCRYPTED PRIVATE KEY decrypted with keyPassword.
func pemKeyEntry(certPEM, keyPEM []byte, keyPassword Secret) (keyEntry, error) {
	certs := pemBlocks(certPEM, isCertificate)
	if len(certs) == 0 {
		return keyEntry{}, errors.New("Invalid PEM keystore configs: At least one certificate expected, but none found")
	}
	// Kafka's PemParser finds any "BEGIN ... PRIVATE KEY" block; one that
	// is not PKCS#8 (a PKCS#1 "RSA PRIVATE KEY") then fails to load.
	keys := pemBlocks(keyPEM, func(t string) bool { return strings.HasSuffix(t, "PRIVATE KEY") })
	if len(keys) == 0 {
		return keyEntry{}, errors.New("Invalid PEM keystore configs: Private key not provided")
	}
	if len(keys) > 1 {
		return keyEntry{}, fmt.Errorf("Invalid PEM keystore configs: Expected one private key, but found %d", len(keys))
	}
	// As PemStore.privateKey: with ssl.key.password the block is read as
	// an EncryptedPrivateKeyInfo, without it as a plain PKCS#8 key, so an
	// encrypted key without a password, or a plain one with a password,
	// does not load.
	var key any
	var err error
	if keyPassword.Set() {
		key, err = pkcs8.ParsePKCS8PrivateKey(keys[0].Bytes, []byte(keyPassword.Value()))
		if err == nil && keys[0].Type != "ENCRYPTED PRIVATE KEY" {
			err = errors.New("not encrypted")
		}
	} else {
		key, err = x509.ParsePKCS8PrivateKey(keys[0].Bytes)
	}
	if err != nil {
		return keyEntry{}, errors.New("Invalid PEM keystore configs: Private key could not be loaded")
	}
	var chain [][]byte
	for _, b := range certs {
		chain = append(chain, b.Bytes)
	}
	cert, err := certificate(chain, key)
	if err != nil {
		return keyEntry{}, fmt.Errorf("Invalid PEM keystore configs: %v", err)
	}
	return keyEntry{alias: "kafka", cert: cert}, nil
}

// pemCertificates parses every CERTIFICATE block of data; Kafka requires
// at least one.
func pemCertificates(data []byte) ([]*x509.Certificate, error) {
	blocks := pemBlocks(data, isCertificate)
	if len(blocks) == 0 {
		return nil, errors.New("At least one certificate expected, but none found")
	}
	var out []*x509.Certificate
	for _, b := range blocks {
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func isCertificate(t string) bool { return t == "CERTIFICATE" }

// pemBlocks returns the blocks of data whose type match accepts, in order;
// other blocks are skipped, as Kafka's PemParser finds only the entries it
// looks for.
func pemBlocks(data []byte, match func(typ string) bool) []*pem.Block {
	var out []*pem.Block
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		if match(b.Type) {
			out = append(out, b)
		}
	}
}

// certificate makes a tls.Certificate of a DER chain, leaf first, and its
// key, which must match the leaf's public key.
func certificate(chain [][]byte, key any) (tls.Certificate, error) {
	if len(chain) == 0 {
		return tls.Certificate{}, errors.New("At least one certificate expected, but none found")
	}
	leaf, err := x509.ParseCertificate(chain[0])
	if err != nil {
		return tls.Certificate{}, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("unsupported private key type %T", key)
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	switch signer.(type) {
	case *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey:
	default:
		return tls.Certificate{}, fmt.Errorf("unsupported private key type %T", key)
	}
	if pub, ok := signer.Public().(equaler); !ok || !pub.Equal(leaf.PublicKey) {
		return tls.Certificate{}, errors.New("the private key does not match the certificate's public key")
	}
	return tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: leaf}, nil
}
