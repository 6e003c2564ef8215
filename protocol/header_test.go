package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestBytes encodes req with the header kmsg's clients write: v1 or, for
// flexible versions, v2 with empty tagged fields.
func requestBytes(req kmsg.Request, corr int32, clientID *string) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	if clientID == nil {
		b = binary.BigEndian.AppendUint16(b, 0xffff)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(*clientID)))
		b = append(b, *clientID...)
	}
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

func TestParseRequestHeader(t *testing.T) {
	id := "client-1"
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	for _, version := range []int16{0, 8, 9, 13} {
		meta.SetVersion(version)
		for _, cid := range []*string{nil, &id} {
			frame := requestBytes(meta, 42, cid)
			h, body, err := ParseRequestHeader(frame)
			if err != nil {
				t.Fatalf("v%d: %v", version, err)
			}
			if h.APIKey != 3 || h.APIVersion != version || h.CorrelationID != 42 {
				t.Fatalf("v%d: header %+v", version, h)
			}
			if (cid == nil) != (h.ClientID == nil) || (cid != nil && *h.ClientID != *cid) {
				t.Fatalf("v%d: client id %v, want %v", version, h.ClientID, cid)
			}
			got := kmsg.NewPtrMetadataRequest()
			got.SetVersion(version)
			if err := got.ReadFrom(body); err != nil {
				t.Fatalf("v%d: body does not decode: %v", version, err)
			}
			if len(got.Topics) != 1 || *got.Topics[0].Topic != "orders" {
				t.Fatalf("v%d: decoded %+v", version, got.Topics)
			}
		}
	}
}

func TestParseRequestHeaderSkipsTaggedFields(t *testing.T) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName = "x"
	req.ClientSoftwareVersion = "1"
	frame := requestBytes(req, 7, nil)
	// Replace the empty tagged-field section (the byte after the null client
	// id) with two tagged fields.
	tagged := []byte{2, 0, 3, 'a', 'b', 'c', 5, 0}
	withTags := append(append(append([]byte{}, frame[:10]...), tagged...), frame[11:]...)
	_, body, err := ParseRequestHeader(withTags)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, frame[11:]) {
		t.Fatalf("body after tagged fields = %x, want %x", body, frame[11:])
	}
}

func TestParseRequestHeaderErrors(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty", nil, ErrTruncatedHeader},
		{"short", []byte{0, 3, 0, 1, 0, 0, 0, 1}, ErrTruncatedHeader},
		{"client id past the end", []byte{0, 3, 0, 1, 0, 0, 0, 1, 0, 9, 'a'}, ErrTruncatedHeader},
		{"unknown key", []byte{0x7f, 0x00, 0, 1, 0, 0, 0, 1, 0xff, 0xff}, ErrUnknownAPIKey},
		{"tagged field longer than the frame", []byte{0, 3, 0, 9, 0, 0, 0, 1, 0xff, 0xff, 1, 0, 0x7f}, ErrTruncatedHeader},
		{"tag count without tags", []byte{0, 3, 0, 9, 0, 0, 0, 1, 0xff, 0xff, 5}, ErrTruncatedHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := ParseRequestHeader(tt.frame); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if _, _, err := ParseRequestHeader([]byte{0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xfe}); err == nil {
		t.Fatal("a client id length of -2 was accepted")
	}
}

func TestIsFlexible(t *testing.T) {
	tests := []struct {
		key, version    int16
		flexible, known bool
	}{
		{0, 8, false, true}, {0, 9, true, true}, // Produce: v9 flexible
		{1, 11, false, true}, {1, 12, true, true}, // Fetch: v12
		{3, 8, false, true}, {3, 9, true, true}, // Metadata: v9
		{18, 2, false, true}, {18, 3, true, true}, {18, 99, true, true}, // ApiVersions: v3, and future versions
		{-1, 0, false, false}, {200, 0, false, false},
	}
	for _, tt := range tests {
		flexible, known := IsFlexible(tt.key, tt.version)
		if flexible != tt.flexible || known != tt.known {
			t.Errorf("IsFlexible(%d, %d) = %v, %v; want %v, %v", tt.key, tt.version, flexible, known, tt.flexible, tt.known)
		}
	}
}

func TestAppendResponseHeaders(t *testing.T) {
	tests := []struct {
		name       string
		resp       kmsg.Response
		headerSize int
	}{
		{"metadata v8 has header v0", func() kmsg.Response { r := kmsg.NewPtrMetadataResponse(); r.SetVersion(8); return r }(), 4},
		{"metadata v9 has header v1", func() kmsg.Response { r := kmsg.NewPtrMetadataResponse(); r.SetVersion(9); return r }(), 5},
		{"api versions v3 keeps header v0", func() kmsg.Response { r := kmsg.NewPtrApiVersionsResponse(); r.SetVersion(3); return r }(), 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := AppendResponse([]byte("prefix"), 99, tt.resp)
			out = out[len("prefix"):]
			if size := binary.BigEndian.Uint32(out); int(size) != len(out)-4 {
				t.Fatalf("size prefix %d, frame holds %d", size, len(out)-4)
			}
			if corr := binary.BigEndian.Uint32(out[4:]); corr != 99 {
				t.Fatalf("correlation id %d", corr)
			}
			if !bytes.Equal(out[4+tt.headerSize:], tt.resp.AppendTo(nil)) {
				t.Fatal("body does not follow the header directly")
			}
		})
	}
}

// FuzzParseRequestHeader checks that header parsing never panics and that the
// body it returns is always a suffix of the frame.
func FuzzParseRequestHeader(f *testing.F) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	f.Add(requestBytes(req, 1, nil))
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	f.Add(requestBytes(meta, 1, kmsg.StringPtr("c")))
	f.Add([]byte{0, 3, 0, 9, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, frame []byte) {
		_, body, err := ParseRequestHeader(frame)
		if err == nil && !bytes.HasSuffix(frame, body) {
			t.Fatal("body is not a suffix of the frame")
		}
	})
}
