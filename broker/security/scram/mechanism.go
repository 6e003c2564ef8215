package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"hash"
)

// A Mechanism is one of Kafka's two SCRAM mechanisms. Its value is the
// type byte Kafka's records and AlterUserScramCredentials carry (Kafka's
// ScramMechanism.type).
type Mechanism int8

// The mechanisms, with Kafka's type bytes. Type 0 is Kafka's UNKNOWN.
const (
	SHA256 Mechanism = 1 // SCRAM-SHA-256: SHA-256 and HmacSHA256
	SHA512 Mechanism = 2 // SCRAM-SHA-512: SHA-512 and HmacSHA512
)

// Iteration bounds. Kafka's ScramMechanism gives both mechanisms a
// minimum of 4096, which the server also requires of a stored credential,
// and a maximum of 16384, which only AlterUserScramCredentials enforces
// (ScramControlManager.MAX_ITERATIONS).
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// Mechanisms lists the mechanisms in the order of their type bytes.
var Mechanisms = []Mechanism{SHA256, SHA512}

// Valid reports whether m is one of the two mechanisms.
func (m Mechanism) Valid() bool { return m == SHA256 || m == SHA512 }

// Name is the SASL mechanism name, "SCRAM-SHA-256" or "SCRAM-SHA-512";
// the empty string for an invalid m.
func (m Mechanism) Name() string {
	switch m {
	case SHA256:
		return "SCRAM-SHA-256"
	case SHA512:
		return "SCRAM-SHA-512"
	}
	return ""
}

// String is Name, or "UNKNOWN" for an invalid m.
func (m Mechanism) String() string {
	if !m.Valid() {
		return "UNKNOWN"
	}
	return m.Name()
}

// enumName is the Java enum constant's name, which Kafka prints in the
// iterations refusal ("... for SCRAM_SHA_256").
func (m Mechanism) enumName() string {
	switch m {
	case SHA256:
		return "SCRAM_SHA_256"
	case SHA512:
		return "SCRAM_SHA_512"
	}
	return "UNKNOWN"
}

// MechanismByName finds a mechanism by its SASL name (exact, as Kafka's
// ScramMechanism.forMechanismName).
func MechanismByName(name string) (Mechanism, bool) {
	switch name {
	case "SCRAM-SHA-256":
		return SHA256, true
	case "SCRAM-SHA-512":
		return SHA512, true
	}
	return 0, false
}

func (m Mechanism) newHash() func() hash.Hash {
	if m == SHA512 {
		return sha512.New
	}
	return sha256.New
}

// Size is the length of the mechanism's hash, keys and signatures: 32 or
// 64 bytes.
func (m Mechanism) Size() int {
	if m == SHA512 {
		return sha512.Size
	}
	return sha256.Size
}

func (m Mechanism) hmac(key, data []byte) []byte {
	h := hmac.New(m.newHash(), key)
	h.Write(data)
	return h.Sum(nil)
}

func (m Mechanism) hash(data []byte) []byte {
	h := m.newHash()()
	h.Write(data)
	return h.Sum(nil)
}

// SaltedPassword is RFC 5802's Hi(password, salt, iterations): PBKDF2
// with the mechanism's HMAC and one hash-sized block. The password is
// taken as its UTF-8 bytes, without SASLprep, as Kafka's
// ScramFormatter.normalize does. Kafka's HMAC refuses an empty key, so an
// empty password is refused (ErrEmptyKey); iterations below 1 count as 1,
// as Kafka's loop does.
func (m Mechanism) SaltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	if !m.Valid() {
		return nil, ErrUnknownMechanism
	}
	if password == "" {
		return nil, ErrEmptyKey
	}
	return pbkdf2.Key(m.newHash(), password, salt, max(iterations, 1), m.Size())
}

// ClientKey is HMAC(SaltedPassword, "Client Key").
func (m Mechanism) ClientKey(saltedPassword []byte) []byte {
	return m.hmac(saltedPassword, []byte("Client Key"))
}

// ServerKey is HMAC(SaltedPassword, "Server Key").
func (m Mechanism) ServerKey(saltedPassword []byte) []byte {
	return m.hmac(saltedPassword, []byte("Server Key"))
}

// StoredKey is H(ClientKey).
func (m Mechanism) StoredKey(clientKey []byte) []byte { return m.hash(clientKey) }

// ClientSignature is HMAC(StoredKey, AuthMessage).
func (m Mechanism) ClientSignature(storedKey []byte, authMessage string) []byte {
	return m.hmac(storedKey, []byte(authMessage))
}

// ServerSignature is HMAC(ServerKey, AuthMessage).
func (m Mechanism) ServerSignature(serverKey []byte, authMessage string) []byte {
	return m.hmac(serverKey, []byte(authMessage))
}

// ClientProof is ClientKey XOR ClientSignature, what a client sends in its
// final message.
func (m Mechanism) ClientProof(saltedPassword []byte, authMessage string) []byte {
	clientKey := m.ClientKey(saltedPassword)
	return xor(clientKey, m.ClientSignature(m.StoredKey(clientKey), authMessage))
}

// AuthMessage is client-first-message-bare + "," + server-first-message +
// "," + client-final-message-without-proof, the text both signatures are
// computed over.
func AuthMessage(clientFirstBare, serverFirst, clientFinalWithoutProof string) string {
	return clientFirstBare + "," + serverFirst + "," + clientFinalWithoutProof
}

// xor of two slices of the same length (the callers check it).
func xor(a, b []byte) []byte {
	out := make([]byte, len(a))
	for i := range a {
		out[i] = a[i] ^ b[i]
	}
	return out
}
