package group

// Kafka's SimpleAssignor builders make their choices in the iteration order
// of Java's HashMap and HashSet: which member is "member 0" (and so gets an
// extra partition), which partition an overfilled member gives up, which
// partition an unfilled member takes. To choose as Kafka chooses, the
// builders here iterate in the order a java.util.HashMap of the same
// history would: entries sorted by bucket, (h ^ h>>>16) & (capacity-1),
// and within a bucket by insertion (a resize splits a bucket keeping the
// order, so the order within a final bucket is the insertion order).
// Capacities grow as Java's do: doubled when the size passes 0.75 of the
// capacity. Tree bins (8 or more keys in one bucket of a table of 64 or
// more) are not emulated; with the hashes involved they do not occur in
// groups of ordinary size.

import (
	"math"
	"sort"
)

// javaMap records the keys of one emulated java.util.HashMap (or HashSet)
// and their insertion order.
type javaMap[K comparable] struct {
	hash     func(K) int32
	capacity int // 0 until the first put
	initial  int
	first    int64 // the lowest place given, for putFirst
	last     int64 // the highest place given, for put
	entries  map[K]int64
}

// newJavaMap is new HashMap<>(initialCapacity); initialCapacity <= 0 is
// new HashMap<>() (16).
func newJavaMap[K comparable](hash func(K) int32, initialCapacity int) *javaMap[K] {
	c := 16
	if initialCapacity > 0 {
		c = tableSizeFor(initialCapacity)
	}
	return &javaMap[K]{hash: hash, initial: c, entries: map[K]int64{}}
}

// javaNewHashMapFor is Kafka's AssignorHelpers.newHashMap(n) and
// Utils.newHashMap(n): new HashMap<>((int) ((n + 1) / 0.75f + 1)).
func javaNewHashMapFor(n int) int {
	return int(float32(n+1)/float32(0.75) + 1)
}

func tableSizeFor(c int) int {
	n := 1
	for n < c {
		n <<= 1
	}
	return n
}

// put is HashMap.put and HashSet.add: a new key goes to the end of its
// bucket's chain.
func (m *javaMap[K]) put(k K) {
	if _, ok := m.entries[k]; ok {
		return
	}
	m.last++
	m.insert(k, m.last)
}

// putFirst is HashMap.computeIfAbsent for a missing key: the new key goes
// to the head of its bucket's chain.
func (m *javaMap[K]) putFirst(k K) {
	if _, ok := m.entries[k]; ok {
		return
	}
	m.first--
	m.insert(k, m.first)
}

func (m *javaMap[K]) insert(k K, place int64) {
	if m.capacity == 0 {
		m.capacity = m.initial
	}
	m.entries[k] = place
	if len(m.entries) > int(float32(m.capacity)*0.75) {
		m.capacity *= 2
	}
}

// putSize puts k and returns the new size.
func (m *javaMap[K]) putSize(k K) int { m.put(k); return len(m.entries) }

func (m *javaMap[K]) remove(k K) { delete(m.entries, k) }

func (m *javaMap[K]) has(k K) bool { _, ok := m.entries[k]; return ok }

func (m *javaMap[K]) size() int { return len(m.entries) }

// keys returns the keys in the emulated iteration order.
func (m *javaMap[K]) keys() []K {
	out := make([]K, 0, len(m.entries))
	for k := range m.entries {
		out = append(out, k)
	}
	mask := int32(m.capacity - 1)
	sort.Slice(out, func(i, j int) bool {
		bi, bj := spread(m.hash(out[i]))&mask, spread(m.hash(out[j]))&mask
		if bi != bj {
			return bi < bj
		}
		return m.entries[out[i]] < m.entries[out[j]]
	})
	return out
}

func spread(h int32) int32 { return h ^ int32(uint32(h)>>16) }

// javaStringHash is java.lang.String.hashCode over UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// javaUUIDHash is org.apache.kafka.common.Uuid.hashCode.
func javaUUIDHash(t TopicID) int32 {
	var msb, lsb uint64
	for i := 0; i < 8; i++ {
		msb = msb<<8 | uint64(t[i])
		lsb = lsb<<8 | uint64(t[8+i])
	}
	h := int64(msb ^ lsb)
	return int32(h>>32) ^ int32(h)
}

// javaTPHash is the hash of Kafka's TopicIdPartition record: 31 *
// topicId.hashCode() + partition, as java.lang.runtime.ObjectMethods
// combines a record's components.
func javaTPHash(tp shareTP) int32 { return 31*javaUUIDHash(tp.t) + tp.p }

func javaIntHash(i int) int32 { return int32(i) }

func javaInt32Hash(i int32) int32 { return i }

// javaHashSetCopyCapacity is the capacity of new HashSet<>(collection):
// max((int) (size / .75f) + 1, 16).
func javaHashSetCopyCapacity(n int) int {
	return int(math.Max(float64(int(float32(n)/0.75)+1), 16))
}

// javaTopicOrder is the order Kafka serializes a Map<Uuid, ...> of these
// topics in: a HashMap filled in byte order of the ids (the map's real
// history is not known here; it matters only for ids in one bucket).
func javaTopicOrder(ids []TopicID) []TopicID {
	sorted := append([]TopicID(nil), ids...)
	sortTopicIDs(sorted)
	m := newJavaMap(javaUUIDHash, 0)
	for _, t := range sorted {
		m.put(t)
	}
	return m.keys()
}

// javaPartitionOrder is the order Kafka serializes a Set<Integer> of
// partitions in: a HashSet filled in ascending order, which is ascending
// unless a partition number reaches the set's capacity.
func javaPartitionOrder(ps []int32) []int32 {
	m := newJavaMap(javaInt32Hash, 0)
	for _, p := range ps {
		m.put(p)
	}
	return m.keys()
}

// timelineOrder emulates the iteration order of the TimelineHashMap that
// holds a Kafka group's members (org.apache.kafka.timeline.BaseHashTable):
// a key's slot is the top bits of hashCode * 0x9E3779B97F4A7C15 for the
// table's length (2 at first, doubled before an insertion would pass 0.75
// of it), and a slot keeps its keys in insertion order (a rehash maps each
// new slot from one old slot, keeping the order; a removal closes the gap).
type timelineOrder struct {
	length int
	next   int64
	seq    map[string]int64
}

func (o *timelineOrder) add(id string) {
	if o.seq == nil {
		o.seq, o.length = map[string]int64{}, 2
	}
	if _, ok := o.seq[id]; ok {
		return
	}
	if float64(len(o.seq)+1)*0.75 > float64(o.length) {
		o.length *= 2
	}
	o.next++
	o.seq[id] = o.next
}

func (o *timelineOrder) remove(id string) { delete(o.seq, id) }

func timelineSlot(h int32, length int) uint64 {
	bits := 0
	for 1<<bits < length {
		bits++
	}
	shift := uint(64 - bits)
	return uint64(int64(h)*-7046029254386353131) >> shift
}

// ids returns the keys in iteration order, leaving out skip.
func (o *timelineOrder) ids(skip string) []string {
	out := make([]string, 0, len(o.seq))
	for id := range o.seq {
		if id != skip {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		si, sj := timelineSlot(javaStringHash(out[i]), o.length), timelineSlot(javaStringHash(out[j]), o.length)
		if si != sj {
			return si < sj
		}
		return o.seq[out[i]] < o.seq[out[j]]
	})
	return out
}
