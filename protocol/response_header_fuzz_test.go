package protocol

import "testing"

// FuzzParseResponseHeader checks that ParseResponseHeader never panics,
// that the body it returns lies inside the frame, and that a frame shorter
// than a correlation id is refused.
func FuzzParseResponseHeader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 7, 0, 1, 2}, true)
	f.Add([]byte{0, 0, 0, 7, 2, 1, 5, 0}, true)
	f.Add([]byte{0, 0, 0}, false)
	f.Fuzz(func(t *testing.T, frame []byte, flexible bool) {
		_, body, err := ParseResponseHeader(frame, flexible)
		if err != nil {
			if body != nil {
				t.Fatalf("body %x returned with error %v", body, err)
			}
			return
		}
		if len(frame) < 4 || len(body) > len(frame)-4 {
			t.Fatalf("body of %d bytes from a frame of %d", len(body), len(frame))
		}
	})
}

func TestParseResponseHeader(t *testing.T) {
	for _, tc := range []struct {
		name     string
		frame    []byte
		flexible bool
		corr     int32
		body     string
		bad      bool
	}{
		{"v0 header", []byte{0, 0, 0, 9, 'a', 'b'}, false, 9, "ab", false},
		{"v1 header without tags", []byte{0, 0, 1, 0, 0, 'x'}, true, 256, "x", false},
		{"v1 header with a tag", []byte{0, 0, 0, 1, 1, 3, 2, 'q', 'r', 'z'}, true, 1, "z", false},
		{"tag longer than the frame", []byte{0, 0, 0, 1, 1, 3, 9, 'q'}, true, 0, "", true},
		{"short", []byte{0, 0, 1}, false, 0, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			corr, body, err := ParseResponseHeader(tc.frame, tc.flexible)
			if tc.bad {
				if err == nil {
					t.Fatalf("no error for %x", tc.frame)
				}
				return
			}
			if err != nil || corr != tc.corr || string(body) != tc.body {
				t.Fatalf("got %d %q %v, want %d %q", corr, body, err, tc.corr, tc.body)
			}
		})
	}
}
