package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

// legacyMessage is a v1 message as an old client sends it: offset, size, crc,
// magic 1, attributes, timestamp, key (null), value.
func legacyMessage(value string) []byte {
	body := []byte{0, 0, 0, 0, 1, 0} // crc (not checked by Split), magic, attributes
	body = binary.BigEndian.AppendUint64(body, 1000)
	body = binary.BigEndian.AppendUint32(body, 0xffffffff)
	body = binary.BigEndian.AppendUint32(body, uint32(len(value)))
	body = append(body, value...)
	m := binary.BigEndian.AppendUint64(nil, 0)
	m = binary.BigEndian.AppendUint32(m, uint32(len(body)))
	return append(m, body...)
}

func TestSplitYieldsEachEntryOfAConcatenation(t *testing.T) {
	var want [][]byte
	for _, c := range codecs {
		want = append(want, mustBuild(t, defaultOptions(c), sampleRecords(4)))
	}
	want = append(want, legacyMessage("old client"))
	blob := bytes.Join(want, nil)

	var got [][]byte
	err := Split(blob, func(b []byte) error {
		if cap(b) != len(b) {
			t.Errorf("entry %d: cap %d > len %d, appending would overwrite the next entry", len(got), cap(b), len(b))
		}
		got = append(got, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("entry %d differs", i)
		}
	}
	if m, _ := Magic(got[len(got)-1]); m != 1 {
		t.Fatalf("legacy entry magic %d", m)
	}
}

func TestSplitRejectsBadFraming(t *testing.T) {
	good := mustBuild(t, defaultOptions(None), sampleRecords(2))
	withLength := func(n int32) []byte {
		b := append([]byte(nil), good...)
		binary.BigEndian.PutUint32(b[offLength:], uint32(n))
		return b
	}
	withMagic := func(m byte) []byte {
		b := append([]byte(nil), good...)
		b[offMagic] = m
		return b
	}
	for _, tc := range []struct {
		name string
		blob []byte
		want error
		n    int // entries seen before the error
	}{
		{"prefix cut short", good[:11], ErrTruncated, 0},
		{"negative length", withLength(-1), ErrCorrupt, 0},
		{"length below 14", withLength(13), ErrCorrupt, 0},
		{"magic 3", withMagic(3), ErrCorrupt, 0},
		{"magic -1", withMagic(0xff), ErrCorrupt, 0},
		{"too short for the magic", withLength(100)[:16], ErrTruncated, 0},
		{"length past the end", withLength(int32(len(good))), ErrTruncated, 0},
		{"huge length", withLength(1<<31 - 1), ErrTruncated, 0},
		{"truncated second entry", append(append([]byte(nil), good...), good[:len(good)-1]...), ErrTruncated, 1},
		{"garbage tail", append(append([]byte(nil), good...), 1, 2, 3), ErrTruncated, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := Split(tc.blob, func([]byte) error { n++; return nil })
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if n != tc.n {
				t.Fatalf("fn saw %d entries, want %d", n, tc.n)
			}
		})
	}
}

func TestSplitEmptyCallsNothing(t *testing.T) {
	for _, blob := range [][]byte{nil, {}} {
		if err := Split(blob, func([]byte) error { t.Fatal("fn called"); return nil }); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSplitStopsAtCallbackError(t *testing.T) {
	b := mustBuild(t, defaultOptions(None), sampleRecords(2))
	stop := errors.New("stop")
	n := 0
	err := Split(bytes.Repeat(b, 3), func([]byte) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("err %v after %d calls; want the callback's error after 1", err, n)
	}
}

func TestSplitGarbageNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		blob := make([]byte, rng.IntN(200))
		for j := range blob {
			blob[j] = byte(rng.Uint32())
		}
		if len(blob) >= 12 && rng.IntN(2) == 0 {
			// A plausible length, so the walk goes further.
			binary.BigEndian.PutUint32(blob[8:], uint32(rng.IntN(len(blob))))
		}
		total := 0
		err := Split(blob, func(b []byte) error { total += len(b); return nil })
		if err == nil && total != len(blob) {
			t.Fatalf("no error, but entries cover %d of %d bytes", total, len(blob))
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v does not wrap ErrCorrupt", err)
		}
	}
}
