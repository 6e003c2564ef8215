package scram

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func TestDecodeRecordRefusals(t *testing.T) {
	// A valid record: frame 1, type 11, version 0, name "a", mechanism 1,
	// salt "s", stored key 01, server key 02, iterations 4096, no tags.
	const ok = "010b000261" + "01" + "0273" + "0201" + "0202" + "00001000" + "00"
	if _, err := DecodeRecord(must(hex.DecodeString(ok))); err != nil {
		t.Fatalf("valid record: %v", err)
	}
	tests := []struct {
		name, hex, msg string
	}{
		{"empty", "", "frame version: truncated varint"},
		{"frame version 0", "000b00" + ok[6:], "unknown frame version 0"},
		{"frame version 2", "020b00" + ok[6:], "unknown frame version 2"},
		{"other type", "011600" + ok[6:], "type 22, want 11"},
		{"version 1", "010b01" + ok[6:], "version 1, want 0"},
		{"null name", "010b0000", "non-nullable field name was serialized as null"},
		{"name too long", "010b00" + "8180020000", "string field name had invalid length 32768"},
		{"name past the end", "010b000561", "name: 4 bytes, only 1 remain"},
		{"no mechanism", "010b000261", "mechanism: 1 bytes, only 0 remain"},
		{"null salt", "010b00026101" + "00", "non-nullable field salt was serialized as null"},
		{"salt past the end", "010b00026101" + "ffffffff07", "salt: 2147483646 bytes, only 0 remain"},
		{"truncated iterations", ok[:len(ok)-6], "iterations: 4 bytes, only 2 remain"},
		{"no tags", ok[:len(ok)-2], "tagged fields: truncated varint"},
		{"long varint", "010b00" + "8080808080", "name: varint is too long"},
		{"garbage after", ok + "00", "1 byte(s) of garbage after the record"},
		{"tag past the end", ok[:len(ok)-2] + "01" + "00" + "05" + "00", "tagged field: 5 bytes, only 1 remain"},
		{"tag of negative size", ok[:len(ok)-2] + "01" + "00" + "ffffffff0f", "tagged field of negative size -1"},
	}
	for _, tt := range tests {
		_, err := DecodeRecord(must(hex.DecodeString(tt.hex)))
		if !errors.Is(err, ErrRecord) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.msg)
		}
	}
}

func TestDecodeRecordSkipsUnknownTags(t *testing.T) {
	const base = "010b000261" + "01" + "0273" + "0201" + "0202" + "00001000"
	r, err := DecodeRecord(must(hex.DecodeString(base + "02" + "0501ff" + "0700")))
	if err != nil || r.Name != "a" || r.Iterations != 4096 {
		t.Fatalf("%+v, %v", r, err)
	}
	// A negative count of tagged fields is none, as in Kafka's loop.
	if _, err := DecodeRecord(must(hex.DecodeString(base + "ffffffff0f"))); err != nil {
		t.Errorf("negative tag count: %v", err)
	}
}

func TestDecodeRemoveRecordRefusals(t *testing.T) {
	for name, h := range map[string]string{
		"user record":     "010b000261" + "01" + "0273" + "0201" + "0202" + "00001000" + "00",
		"truncated":       "0116000261",
		"garbage after":   "0116000261010000",
		"frame version 0": "0016000261" + "0100",
	} {
		if _, err := DecodeRemoveRecord(must(hex.DecodeString(h))); !errors.Is(err, ErrRecord) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestEncodeRefusesLongNames(t *testing.T) {
	long := strings.Repeat("x", 32768)
	if _, err := (Record{Name: long}).Encode(); !errors.Is(err, ErrRecord) {
		t.Errorf("user record: %v", err)
	}
	if _, err := (RemoveRecord{Name: long}).Encode(); !errors.Is(err, ErrRecord) {
		t.Errorf("remove record: %v", err)
	}
	if _, err := (Record{Name: long[1:]}).Encode(); err != nil {
		t.Errorf("32767 bytes: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
