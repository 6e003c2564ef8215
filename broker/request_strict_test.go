package broker

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// encodedBody is req's body as a client would send it.
func encodedBody(req kmsg.Request) []byte { return req.AppendTo(nil) }

// replaced is b with n bytes at off replaced by with.
func replaced(b []byte, off, n int, with ...byte) []byte {
	out := append([]byte(nil), b[:off]...)
	out = append(out, with...)
	return append(out, b[off+n:]...)
}

func produceV(version int16) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, -1, 1000
	return req
}

func offsetCommitV10() *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation, req.MemberID = 10, "g", 1, "m"
	return req
}

func createTopicsV7() *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = 7, 1000
	return req
}

func TestNullInNonNullable(t *testing.T) {
	produce13 := encodedBody(produceV(13)) // null txn id, acks, timeout, topics, tags
	produce3 := encodedBody(produceV(3))
	commit := encodedBody(offsetCommitV10()) // ..., topics, tags
	create := encodedBody(createTopicsV7())  // topics, timeout, validate only, tags
	metadata4 := kmsg.NewPtrMetadataRequest()
	metadata4.Version = 4
	metadata4.Topics = nil // all topics: a null array
	metadataBody := encodedBody(metadata4)

	withPartition := produceV(13)
	topic := kmsg.NewProduceRequestTopic()
	topic.TopicID = [16]byte{1}
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = []byte("records")
	topic.Partitions = []kmsg.ProduceRequestTopicPartition{part}
	withPartition.Topics = []kmsg.ProduceRequestTopic{topic}
	partitionBody := encodedBody(withPartition)
	partitionsAt := 1 + 2 + 4 + 1 + 16 // null txn id, acks, timeout, topics count, topic id

	for _, tc := range []struct {
		name string
		req  kmsg.Request
		body []byte
		want bool
	}{
		{"Produce v13 as a client sends it", produceV(13), produce13, false},
		{"Produce v13 topics null", produceV(13), replaced(produce13, 7, 1, 0x00), true},
		{"Produce v13 topics count 2^32-1", produceV(13), replaced(produce13, 7, 1, 0xff, 0xff, 0xff, 0xff, 0x0f), true},
		{"Produce v13 partitions null", withPartition, replaced(partitionBody, partitionsAt, 1, 0x00), true},
		{"Produce v13 with records", withPartition, partitionBody, false},
		{"Produce v13 records null", withPartition, replaced(partitionBody, partitionsAt+1+4, 1+len("records"), 0x00), false},
		{"Produce v3 topics -1", produceV(3), replaced(produce3, 8, 4, 0xff, 0xff, 0xff, 0xff), true},
		{"OffsetCommit v10 topics null", offsetCommitV10(), replaced(commit, len(commit)-2, 1, 0x00), true},
		{"OffsetCommit v10 topics count 2^31", offsetCommitV10(), replaced(commit, len(commit)-2, 1, 0x81, 0x80, 0x80, 0x80, 0x08), true},
		{"OffsetCommit v10 empty topics, a non-minimal varint", offsetCommitV10(), replaced(commit, len(commit)-2, 1, 0x81, 0x00), false},
		{"CreateTopics v7 topics null", createTopicsV7(), replaced(create, 0, 1, 0x00), true},
		{"CreateTopics v7 as a client sends it", createTopicsV7(), create, false},
		{"Metadata v4 all topics (null)", metadata4, metadataBody, false},
		{"Metadata v4 topics -2 (null too)", metadata4, replaced(metadataBody, 0, 4, 0xff, 0xff, 0xff, 0xfe), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.RequestForKey(tc.req.Key())
			req.SetVersion(tc.req.GetVersion())
			if err := req.ReadFrom(tc.body); err != nil {
				t.Fatalf("kmsg does not decode the body: %v", err)
			}
			if got := nullInNonNullable(req, tc.body); got != tc.want {
				t.Errorf("nullInNonNullable = %v, want %v", got, tc.want)
			}
			if p, ok := req.(*kmsg.ProduceRequest); ok {
				generic := forgivenNegativeLength(tc.body, p.AppendTo(nil), p.IsFlexible())
				if generic != tc.want {
					t.Errorf("re-encoding the Produce gives %v, the walk %v", generic, tc.want)
				}
			}
		})
	}
}

// TestNullArrayClosesTheConnection sends the requests of issue #19's table
// whose non-nullable arrays are null: Kafka closes the connection, and so
// does Gregor; a well-formed request on the next connection is answered.
func TestNullArrayClosesTheConnection(t *testing.T) {
	b := startBroker(t, Config{})
	for _, tc := range []struct {
		name string
		req  kmsg.Request
		at   func(body []byte) int // the offset of the array's count in the body
	}{
		{"Produce v13", produceV(13), func([]byte) int { return 7 }},
		{"OffsetCommit v10", offsetCommitV10(), func(body []byte) int { return len(body) - 2 }},
		{"CreateTopics v7", createTopicsV7(), func([]byte) int { return 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, b.Addr())
			frame := encodeRequest(tc.req, 1)
			headerLen := len(frame) - len(encodedBody(tc.req))
			off := headerLen + tc.at(frame[headerLen:])
			if !bytes.Equal(frame[off:off+1], []byte{1}) {
				t.Fatalf("byte %d is %#x, not an empty array's count", off, frame[off])
			}
			frame[off] = 0
			if _, err := c.nc.Write(frame); err != nil {
				t.Fatal(err)
			}
			c.expectClosed()

			ok := dialRaw(t, b.Addr())
			ok.do(tc.req)
		})
	}
}

// FuzzNullInNonNullable checks any body kmsg decodes: the check never
// panics, and for Produce a refusal found by encoding the body back is
// one the walk finds as well (the walk sees past non-canonical bytes that
// stop the comparison, so it may find more).
func FuzzNullInNonNullable(f *testing.F) {
	f.Add(int16(0), int16(13), encodedBody(produceV(13)))
	f.Add(int16(0), int16(13), replaced(encodedBody(produceV(13)), 7, 1, 0x00))
	f.Add(int16(0), int16(3), encodedBody(produceV(3)))
	f.Add(int16(8), int16(10), encodedBody(offsetCommitV10()))
	f.Add(int16(19), int16(7), encodedBody(createTopicsV7()))
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		req := kmsg.RequestForKey(key)
		if req == nil || version < 0 || version > req.MaxVersion() {
			return
		}
		req.SetVersion(version)
		if req.ReadFrom(body) != nil {
			return
		}
		walked := nullInNonNullable(req, body)
		if p, ok := req.(*kmsg.ProduceRequest); ok {
			if forgivenNegativeLength(body, p.AppendTo(nil), p.IsFlexible()) && !walked {
				t.Errorf("Produce v%d %x: encoding back finds a negative count, the walk does not", version, body)
			}
		}
	})
}

// BenchmarkNullInNonNullable is the check's cost on the requests a client
// sends most: a Fetch of 100 partitions (encoded back) and a Produce of
// 10 partitions of 64 KiB each (walked).
func BenchmarkNullInNonNullable(b *testing.B) {
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 13
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = [16]byte{1}
	for i := range 100 {
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = int32(i)
		ft.Partitions = append(ft.Partitions, p)
	}
	fetch.Topics = []kmsg.FetchRequestTopic{ft}

	produce := produceV(13)
	pt := kmsg.NewProduceRequestTopic()
	for i := range 10 {
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition, p.Records = int32(i), make([]byte, 64<<10)
		pt.Partitions = append(pt.Partitions, p)
	}
	produce.Topics = []kmsg.ProduceRequestTopic{pt}

	for _, req := range []kmsg.Request{fetch, produce} {
		body := encodedBody(req)
		b.Run(kmsg.NameForKey(req.Key()), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if nullInNonNullable(req, body) {
					b.Fatal("refused")
				}
			}
		})
	}
}
