package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
)

func frame(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

func TestReadFrame(t *testing.T) {
	tests := []struct {
		name    string
		input   []byte
		max     int32
		want    []byte
		wantErr error
	}{
		{"empty payload", frame(nil), 10, []byte{}, nil},
		{"payload", frame([]byte("hello")), 10, []byte("hello"), nil},
		{"at the limit", frame([]byte("0123456789")), 10, []byte("0123456789"), nil},
		{"over the limit", frame([]byte("0123456789a")), 10, nil, ErrFrameTooLarge},
		{"huge claim allocates nothing", []byte{0x7f, 0xff, 0xff, 0xff}, DefaultMaxFrameBytes, nil, ErrFrameTooLarge},
		{"negative size", []byte{0xff, 0xff, 0xff, 0xfe, 1, 2}, 10, nil, ErrNegativeFrameSize},
		{"clean end", nil, 10, nil, io.EOF},
		{"cut in prefix", []byte{0, 0}, 10, nil, io.ErrUnexpectedEOF},
		{"cut in payload", []byte{0, 0, 0, 5, 'a', 'b'}, 10, nil, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadFrame(bytes.NewReader(tt.input), tt.max, nil)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && !bytes.Equal(got, tt.want) {
				t.Fatalf("payload = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReadFrameClaimCostsWhatArrives: a 100 MiB frame of which 10 bytes
// arrive costs the reader about its first chunk, not the claim; a whole
// large frame still reads whole.
func TestReadFrameClaimCostsWhatArrives(t *testing.T) {
	claim := append(binary.BigEndian.AppendUint32(nil, DefaultMaxFrameBytes), make([]byte, 10)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := ReadFrame(bytes.NewReader(claim), DefaultMaxFrameBytes, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*firstChunk {
		t.Fatalf("a frame cut short after 10 bytes allocated %d bytes", got)
	}
	for _, size := range []int{firstChunk - 1, firstChunk, firstChunk + 1, 5*firstChunk + 3} {
		payload := bytes.Repeat([]byte{7}, size)
		payload[size-1] = 9
		got, err := ReadFrame(iotest.OneByteReader(bytes.NewReader(frame(payload))), DefaultMaxFrameBytes, nil)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("size %d: err %v, %d bytes read", size, err, len(got))
		}
	}
}

func TestReadFrameReusesBuffer(t *testing.T) {
	buf := make([]byte, 0, 64)
	got, err := ReadFrame(bytes.NewReader(frame([]byte("abc"))), 100, buf)
	if err != nil {
		t.Fatal(err)
	}
	if &got[0] != &buf[:1][0] {
		t.Fatal("ReadFrame allocated although the buffer was large enough")
	}
}

func TestReadFrameSequence(t *testing.T) {
	var stream []byte
	for _, p := range []string{"one", "", "three"} {
		stream = append(stream, frame([]byte(p))...)
	}
	r := bytes.NewReader(stream)
	for _, want := range []string{"one", "", "three"} {
		got, err := ReadFrame(r, 100, nil)
		if err != nil || string(got) != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
	if _, err := ReadFrame(r, 100, nil); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

// FuzzReadFrame checks that ReadFrame never panics, never returns more than
// the input holds, and never allocates a payload larger than the limit.
func FuzzReadFrame(f *testing.F) {
	f.Add(frame([]byte("hello")))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		total := 0
		for {
			p, err := ReadFrame(r, 1<<16, nil)
			if err != nil {
				break
			}
			if len(p) > 1<<16 {
				t.Fatalf("payload of %d bytes exceeds the limit", len(p))
			}
			total += 4 + len(p)
		}
		if total > len(in) {
			t.Fatalf("read %d bytes from %d", total, len(in))
		}
	})
}
