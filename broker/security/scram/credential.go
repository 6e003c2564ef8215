package scram

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Errors of the credential functions, declared together.
var (
	// ErrUnknownMechanism: a Mechanism that is neither SHA256 nor SHA512.
	ErrUnknownMechanism = errors.New("scram: unknown SCRAM mechanism")
	// ErrEmptyKey: an empty password or salted password, which Kafka's
	// HMAC key refuses ("Empty key").
	ErrEmptyKey = errors.New("scram: empty key")
	// ErrCredentialString: a credential string Kafka's
	// ScramCredentialUtils.credentialFromString refuses. The error never
	// holds the string, whose keys are secret.
	ErrCredentialString = errors.New("scram: credentials not valid")
)

// A Credential is what the server stores for one user and mechanism
// (Kafka's ScramCredential): never the password, only what verifies a
// client's proof and signs the server's answer.
type Credential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// NewCredential derives the credential of a password, as Kafka's
// ScramFormatter.generateCredential: Hi over the salt, then the stored and
// server keys. It does not check the iteration bounds
// (ValidateAlterations does, as Kafka's controller).
func NewCredential(m Mechanism, password string, salt []byte, iterations int32) (Credential, error) {
	salted, err := m.SaltedPassword(password, salt, int(iterations))
	if err != nil {
		return Credential{}, err
	}
	return CredentialFromSaltedPassword(m, salt, salted, iterations)
}

// CredentialFromSaltedPassword derives the credential from a salted
// password, what an AlterUserScramCredentials upsertion carries.
func CredentialFromSaltedPassword(m Mechanism, salt, saltedPassword []byte, iterations int32) (Credential, error) {
	if !m.Valid() {
		return Credential{}, ErrUnknownMechanism
	}
	if len(saltedPassword) == 0 {
		return Credential{}, ErrEmptyKey
	}
	return Credential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  m.StoredKey(m.ClientKey(saltedPassword)),
		ServerKey:  m.ServerKey(saltedPassword),
		Iterations: iterations,
	}, nil
}

// RandomString is Kafka's ScramFormatter.secureRandomString: 130 random
// bits written in base 36, the shape of the server's nonce.
func RandomString() string {
	var b [17]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[0] &= 0x03           // 136 bits read, 130 kept
	return new(big.Int).SetBytes(b[:]).Text(36)
}

// RandomSalt is Kafka's ScramFormatter.secureRandomBytes: the UTF-8 bytes
// of a RandomString.
func RandomSalt() []byte { return []byte(RandomString()) }

// FormatCredential writes a credential as Kafka's
// ScramCredentialUtils.credentialToString:
// "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>".
func FormatCredential(c Credential) string {
	enc := base64.StdEncoding.EncodeToString
	return "salt=" + enc(c.Salt) + ",stored_key=" + enc(c.StoredKey) + ",server_key=" + enc(c.ServerKey) +
		",iterations=" + strconv.Itoa(int(c.Iterations))
}

// ParseCredential reads what FormatCredential writes, as Kafka's
// credentialFromString: exactly the four keys (a repeated key counts once,
// the last value winning), each value base64 (padding optional) or an
// int32 for iterations, any value accepted.
func ParseCredential(s string) (Credential, error) {
	props := map[string]string{}
	for _, kv := range javaSplit(s, ',') {
		i := strings.IndexByte(kv, '=')
		if i <= 0 {
			return Credential{}, fmt.Errorf("%w: an entry without a key", ErrCredentialString)
		}
		props[kv[:i]] = kv[i+1:]
	}
	if len(props) != 4 {
		return Credential{}, fmt.Errorf("%w: %d keys, want salt, stored_key, server_key and iterations", ErrCredentialString, len(props))
	}
	var c Credential
	for _, f := range []struct {
		key string
		dst *[]byte
	}{{"salt", &c.Salt}, {"stored_key", &c.StoredKey}, {"server_key", &c.ServerKey}} {
		v, ok := props[f.key]
		if !ok {
			return Credential{}, fmt.Errorf("%w: no %s", ErrCredentialString, f.key)
		}
		b, err := javaBase64(v)
		if err != nil {
			return Credential{}, fmt.Errorf("%w: %s: %v", ErrCredentialString, f.key, err)
		}
		*f.dst = b
	}
	it, ok := props["iterations"]
	if !ok {
		return Credential{}, fmt.Errorf("%w: no iterations", ErrCredentialString)
	}
	n, err := javaParseInt(it)
	if err != nil {
		return Credential{}, fmt.Errorf("%w: iterations: %v", ErrCredentialString, err)
	}
	c.Iterations = n
	return c, nil
}

// javaSplit is Java's String.split on a one-character literal: trailing
// empty strings are dropped, and an empty input is one empty string.
func javaSplit(s string, sep byte) []string {
	parts := strings.Split(s, string(sep))
	if s == "" {
		return parts
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// javaParseInt is Java's Integer.parseInt for ASCII: an optional sign and
// decimal digits within int32. (Java also takes other scripts' digits.)
func javaParseInt(s string) (int32, error) {
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "+"), "-")
	if len(s)-len(digits) > 1 || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, errors.New("not a number")
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, errors.New("out of range")
	}
	return int32(n), nil
}

// javaBase64 decodes as Java's Base64.getDecoder(): the standard alphabet,
// padding optional but, when present, right; nothing after it; unused
// trailing bits ignored.
func javaBase64(s string) ([]byte, error) {
	data, pad, _ := strings.Cut(s, "=")
	if strings.IndexFunc(data, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '/')
	}) >= 0 {
		return nil, errors.New("illegal base64 character")
	}
	switch {
	case len(data)%4 == 1:
		return nil, errors.New("last unit does not have enough valid bits")
	case len(s) > len(data) && (len(data)%4 == 0 || len(data)%4 == 2 && pad != "=" || len(data)%4 == 3 && pad != ""):
		return nil, errors.New("wrong 4-byte ending unit")
	}
	return base64.RawStdEncoding.DecodeString(data)
}
