package metadata

import (
	"fmt"
	"maps"
	"slices"
)

// ScramCredential is what the metadata log keeps of a user's SCRAM
// credential for one mechanism, as Kafka's UserScramCredentialRecord: the
// salt, the stored and server keys (RFC 5802) and the iteration count;
// never a password or a salted password.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// UserScramCredentialRecord sets a user's credential for one mechanism,
// as Kafka's UserScramCredentialRecord (apiKey 11). Mechanism is Kafka's
// ScramMechanism type: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
type UserScramCredentialRecord struct {
	Name      string
	Mechanism int8
	ScramCredential
}

func (*UserScramCredentialRecord) Type() RecordType { return TypeUserScramCredential }

func (r *UserScramCredentialRecord) encode(e *encoder) {
	e.string(r.Name)
	e.varint(int64(r.Mechanism))
	e.byteString(r.Salt)
	e.byteString(r.StoredKey)
	e.byteString(r.ServerKey)
	e.int32(r.Iterations)
}

func decodeUserScramCredential(d *decoder) *UserScramCredentialRecord {
	return &UserScramCredentialRecord{Name: d.string(), Mechanism: d.int8(),
		ScramCredential: ScramCredential{Salt: d.byteString(), StoredKey: d.byteString(), ServerKey: d.byteString(), Iterations: d.int32()}}
}

// RemoveUserScramCredentialRecord deletes a user's credential for one
// mechanism, as Kafka's RemoveUserScramCredentialRecord (apiKey 22).
type RemoveUserScramCredentialRecord struct {
	Name      string
	Mechanism int8
}

func (*RemoveUserScramCredentialRecord) Type() RecordType { return TypeRemoveUserScramCredential }

func (r *RemoveUserScramCredentialRecord) encode(e *encoder) {
	e.string(r.Name)
	e.varint(int64(r.Mechanism))
}

// byteString is a length-prefixed byte string, as string.
func (e *encoder) byteString(b []byte) { e.uvarint(uint64(len(b))); e.b = append(e.b, b...) }

func (d *decoder) byteString() []byte {
	n := d.length(d.uvarint(), 1)
	return d.bytes(n)
}

func (d *decoder) int8() int8 {
	v := d.varint()
	if v < -128 || v > 127 {
		d.fail("int8 out of range")
		return 0
	}
	return int8(v)
}

// applyUserScramCredential is Kafka's ScramControlManager.replay of a
// UserScramCredentialRecord. A user's mechanism map is replaced, never
// changed in place (see Image).
func (im *Image) applyUserScramCredential(r *UserScramCredentialRecord) error {
	if r.Name == "" {
		return fmt.Errorf("%w: SCRAM credential of an empty user name", ErrInconsistent)
	}
	creds := maps.Clone(im.ScramCredentials[r.Name])
	if creds == nil {
		creds = map[int8]ScramCredential{}
	}
	creds[r.Mechanism] = r.ScramCredential
	if im.ScramCredentials == nil {
		im.ScramCredentials = map[string]map[int8]ScramCredential{}
	}
	im.ScramCredentials[r.Name] = creds
	return nil
}

// applyRemoveUserScramCredential is Kafka's ScramControlManager.replay of
// a RemoveUserScramCredentialRecord: the controller writes one only for a
// credential that exists, so another is ErrInconsistent.
func (im *Image) applyRemoveUserScramCredential(r *RemoveUserScramCredentialRecord) error {
	creds, ok := im.ScramCredentials[r.Name]
	if _, has := creds[r.Mechanism]; !ok || !has {
		return fmt.Errorf("%w: removal of user %q's SCRAM credential %d, which does not exist", ErrInconsistent, r.Name, r.Mechanism)
	}
	creds = maps.Clone(creds)
	delete(creds, r.Mechanism)
	if len(creds) == 0 {
		delete(im.ScramCredentials, r.Name)
	} else {
		im.ScramCredentials[r.Name] = creds
	}
	return nil
}

// scramRecords are the records that rebuild im.ScramCredentials, by user
// then mechanism.
func (im *Image) scramRecords() []Record {
	var recs []Record
	for _, name := range slices.Sorted(maps.Keys(im.ScramCredentials)) {
		creds := im.ScramCredentials[name]
		for _, m := range slices.Sorted(maps.Keys(creds)) {
			recs = append(recs, &UserScramCredentialRecord{Name: name, Mechanism: m, ScramCredential: creds[m]})
		}
	}
	return recs
}
