package metadata

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

var (
	alice      = QuotaEntityName{Present: true, Name: "alice"}
	defaultOne = QuotaEntityName{Present: true, Default: true}
	app        = QuotaEntityName{Present: true, Name: "app"}
)

func quotaSet(key string, v float64, data ...QuotaEntityData) *ClientQuotaRecord {
	return &ClientQuotaRecord{Entity: data, Key: key, Value: v}
}

func quotaRemove(key string, data ...QuotaEntityData) *ClientQuotaRecord {
	return &ClientQuotaRecord{Entity: data, Key: key, Remove: true}
}

func TestClientQuotaRecordsBuildTheImage(t *testing.T) {
	user := func(n *string) QuotaEntityData { return QuotaEntityData{Type: QuotaUser, Name: n} }
	client := func(n *string) QuotaEntityData { return QuotaEntityData{Type: QuotaClientID, Name: n} }
	ip := func(n *string) QuotaEntityData { return QuotaEntityData{Type: QuotaIP, Name: n} }
	aliceApp := ClientQuotaEntity{User: alice, ClientID: app}
	im := NewImage()
	steps := []struct {
		name string
		rec  *ClientQuotaRecord
		err  error
		want map[ClientQuotaEntity]map[string]float64
	}{
		{"set a user's key", quotaSet("producer_byte_rate", 1024, user(str("alice"))), nil,
			map[ClientQuotaEntity]map[string]float64{{User: alice}: {"producer_byte_rate": 1024}}},
		{"components in any order name the same entity", quotaSet("consumer_byte_rate", 2048, client(str("app")), user(str("alice"))), nil,
			map[ClientQuotaEntity]map[string]float64{{User: alice}: {"producer_byte_rate": 1024}, aliceApp: {"consumer_byte_rate": 2048}}},
		{"a second key", quotaSet("request_percentage", 50.5, user(str("alice"))), nil,
			map[ClientQuotaEntity]map[string]float64{{User: alice}: {"producer_byte_rate": 1024, "request_percentage": 50.5},
				aliceApp: {"consumer_byte_rate": 2048}}},
		{"removing a key keeps the others", quotaRemove("producer_byte_rate", user(str("alice"))), nil,
			map[ClientQuotaEntity]map[string]float64{{User: alice}: {"request_percentage": 50.5}, aliceApp: {"consumer_byte_rate": 2048}}},
		{"removing the last key drops the entity", quotaRemove("consumer_byte_rate", user(str("alice")), client(str("app"))), nil,
			map[ClientQuotaEntity]map[string]float64{{User: alice}: {"request_percentage": 50.5}}},
		{"removing an unset key of an unknown entity changes nothing", quotaRemove("producer_byte_rate", client(nil)), nil,
			map[ClientQuotaEntity]map[string]float64{{User: alice}: {"request_percentage": 50.5}}},
		{"the default ip", quotaSet("connection_creation_rate", 10, ip(nil)), nil,
			map[ClientQuotaEntity]map[string]float64{{User: alice}: {"request_percentage": 50.5}, {IP: defaultOne}: {"connection_creation_rate": 10}}},
		{"a repeated type keeps its last name", quotaSet("producer_byte_rate", 7, user(str("bob")), user(str("alice"))), nil,
			map[ClientQuotaEntity]map[string]float64{{User: alice}: {"request_percentage": 50.5, "producer_byte_rate": 7},
				{IP: defaultOne}: {"connection_creation_rate": 10}}},
		{"an unknown entity type", quotaSet("k", 1, QuotaEntityData{Type: "group", Name: str("g")}), ErrInconsistent, nil},
		{"no entity", quotaSet("k", 1), ErrInconsistent, nil},
	}
	for _, s := range steps {
		before := EncodeSnapshot(im)
		err := im.Apply(1, s.rec)
		if !errors.Is(err, s.err) || (s.err == nil) != (err == nil) {
			t.Fatalf("%s: err = %v, want %v", s.name, err, s.err)
		}
		if err != nil {
			if !bytes.Equal(before, EncodeSnapshot(im)) {
				t.Fatalf("%s: a refused record changed the image", s.name)
			}
			continue
		}
		if !reflect.DeepEqual(im.ClientQuotas, s.want) {
			t.Fatalf("%s: quotas %v, want %v", s.name, im.ClientQuotas, s.want)
		}
	}
}

// TestClientQuotaClonesAreUnchangedByLaterRecords: a published image keeps
// its quotas while the live one moves on.
func TestClientQuotaClonesAreUnchangedByLaterRecords(t *testing.T) {
	im := NewImage()
	e := []QuotaEntityData{{Type: QuotaClientID, Name: str("app")}}
	im.Apply(1, quotaSet("producer_byte_rate", 1, e...))
	clone := im.Clone()
	im.Apply(2, quotaSet("producer_byte_rate", 2, e...))
	im.Apply(3, quotaSet("consumer_byte_rate", 3, QuotaEntityData{Type: QuotaUser}))
	want := map[ClientQuotaEntity]map[string]float64{{ClientID: app}: {"producer_byte_rate": 1}}
	if !reflect.DeepEqual(clone.ClientQuotas, want) {
		t.Fatalf("clone's quotas changed: %v", clone.ClientQuotas)
	}
}

// TestClientQuotaEncodingGolden compares the encoding of client quota
// records with testdata/client_quota_records.hex (go test -update
// rewrites it) and decodes the golden bytes back.
func TestClientQuotaEncodingGolden(t *testing.T) {
	recs := []Record{
		quotaSet("producer_byte_rate", 1024, QuotaEntityData{Type: QuotaUser, Name: str("alice")}, QuotaEntityData{Type: QuotaClientID}),
		quotaSet("request_percentage", 12.5, QuotaEntityData{Type: QuotaClientID, Name: str("app")}),
		quotaRemove("connection_creation_rate", QuotaEntityData{Type: QuotaIP, Name: str("10.0.0.1")}),
	}
	raw := checkGolden(t, "client_quota_records.hex", AppendRecords(nil, recs))
	back, err := DecodeRecords(raw)
	if err != nil || !reflect.DeepEqual(back, recs) {
		t.Fatalf("golden bytes decode to %+v, %v", back, err)
	}
	// Version 0 is the only one; a newer one is refused.
	one := AppendRecords(nil, recs[:1])
	if one[2] != byte(TypeClientQuota) || one[3] != 0 {
		t.Fatalf("not type 14 version 0: % x", one[:4])
	}
	one[3] = 1
	if _, err := DecodeRecords(one); !errors.Is(err, ErrMalformed) {
		t.Fatalf("version 1: %v", err)
	}
}

func TestClientQuotaDecodeRefusesDamage(t *testing.T) {
	good := AppendRecords(nil, []Record{quotaSet("k", 1, QuotaEntityData{Type: QuotaUser, Name: str("u")})})
	for name, b := range map[string][]byte{
		"short value":         good[:len(good)-2],
		"no remove flag":      good[:len(good)-1],
		"bad remove flag":     append(good[:len(good)-1:len(good)-1], 2),
		"huge entity count":   {1, 5, byte(TypeClientQuota), 0, 0xff, 0xff, 0x03},
		"entity past the end": {1, 4, byte(TypeClientQuota), 0, 2, 1},
	} {
		if _, err := DecodeRecords(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func genClientQuotaRecords(t *rapid.T) []Record {
	types := []string{QuotaUser, QuotaClientID, QuotaIP}
	name := rapid.Custom(func(t *rapid.T) *string {
		if rapid.Bool().Draw(t, "default") {
			return nil
		}
		return str(rapid.SampledFrom([]string{"", "a", "b"}).Draw(t, "name"))
	})
	value := rapid.OneOf(rapid.Float64(), rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Copysign(0, -1), 1024}))
	n := rapid.IntRange(0, 30).Draw(t, "n")
	recs := make([]Record, 0, n)
	for range n {
		r := &ClientQuotaRecord{Key: rapid.SampledFrom([]string{"producer_byte_rate", "x"}).Draw(t, "key"),
			Remove: rapid.Bool().Draw(t, "remove")}
		if !r.Remove {
			r.Value = value.Draw(t, "value")
		}
		for _, i := range rapid.SliceOfNDistinct(rapid.IntRange(0, 2), 1, 3, rapid.ID[int]).Draw(t, "types") {
			r.Entity = append(r.Entity, QuotaEntityData{Type: types[i], Name: name.Draw(t, "name")})
		}
		recs = append(recs, r)
	}
	return recs
}

// TestClientQuotaSnapshotRebuildsTheSameQuotas: for any client quota
// records, the snapshot's records rebuild the same quotas (compared by
// encoding, which keeps NaN), and every record round-trips.
func TestClientQuotaSnapshotRebuildsTheSameQuotas(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := genClientQuotaRecords(t)
		back, err := DecodeRecords(AppendRecords(nil, recs))
		if err != nil || !bytes.Equal(AppendRecords(nil, back), AppendRecords(nil, recs)) {
			t.Fatalf("records do not round-trip: %v", err)
		}
		im := NewImage()
		for i, r := range recs {
			if err := im.Apply(uint64(i+1), r); err != nil {
				t.Fatal(err)
			}
		}
		for _, values := range im.ClientQuotas {
			if len(values) == 0 {
				t.Fatal("an entity without quotas is kept")
			}
		}
		snap := EncodeSnapshot(im)
		got, err := DecodeSnapshot(snap)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(EncodeSnapshot(got), snap) || len(got.ClientQuotas) != len(im.ClientQuotas) {
			t.Fatal("the snapshot rebuilds other quotas")
		}
	})
}

// FuzzClientQuotaRecords feeds arbitrary bytes, seeded with client quota
// records, to DecodeBatch and DecodeSnapshot. Invariants: they never
// panic; failures are ErrMalformed (ErrInconsistent too for a snapshot);
// what decodes re-encodes to the same bytes; applying decoded records
// never panics, and a refused record leaves the image as it was.
func FuzzClientQuotaRecords(f *testing.F) {
	recs := []Record{
		quotaSet("producer_byte_rate", 1024, QuotaEntityData{Type: QuotaUser, Name: str("alice")}, QuotaEntityData{Type: QuotaClientID}),
		quotaSet("request_percentage", math.NaN(), QuotaEntityData{Type: QuotaClientID, Name: str("app")}),
		quotaSet("connection_creation_rate", 5, QuotaEntityData{Type: QuotaIP}),
		quotaRemove("producer_byte_rate", QuotaEntityData{Type: QuotaUser, Name: str("alice")}, QuotaEntityData{Type: QuotaClientID}),
	}
	im := NewImage()
	for i, r := range recs {
		im.Apply(uint64(i+1), r)
	}
	f.Add(EncodeBatch(Batch{Proposer: 1, Seq: 3, Records: recs}))
	f.Add(EncodeSnapshot(im))
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := DecodeBatch(data); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeBatch: %v is not ErrMalformed", err)
			}
		} else {
			enc := EncodeBatch(b)
			b2, err := DecodeBatch(enc)
			if err != nil || !bytes.Equal(EncodeBatch(b2), enc) {
				t.Fatalf("batch does not round-trip: %v", err)
			}
			img := NewImage()
			for i, r := range b.Records {
				before := EncodeSnapshot(img)
				if img.Apply(uint64(i+1), r) != nil && !bytes.Equal(before, EncodeSnapshot(img)) {
					t.Fatalf("a refused %T changed the image", r)
				}
			}
		}
		img, err := DecodeSnapshot(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrInconsistent) {
				t.Fatalf("DecodeSnapshot: %v", err)
			}
			return
		}
		snap := EncodeSnapshot(img)
		again, err := DecodeSnapshot(snap)
		if err != nil || !bytes.Equal(EncodeSnapshot(again), snap) {
			t.Fatalf("snapshot does not round-trip: %v", err)
		}
	})
}
