package share

import "encoding/binary"

// Kafka's ShareCoordinatorService gathers a request's answers in
// java.util.HashMaps (topic id, then partition) and answers in their
// iteration order. javaHashOrder reproduces that order so that Gregor's
// answers list topics and partitions as Kafka's do.

// javaUUIDHash is Kafka's Uuid.hashCode.
func javaUUIDHash(id [16]byte) int32 {
	x := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:])
	return int32(x>>32) ^ int32(x)
}

// javaHashOrder is the order a java.util.HashMap iterates keys with
// these hashes, distinct and put in this order: the indexes of keys, as
// iterated. It follows HashMap's table (16 bins at first, doubled when the
// size passes three quarters of it, or when a bin reaches 9 entries while
// the table has fewer than 64 bins) and its bins' insertion order. A bin
// of 9 or more entries in a table of 64 or more bins is a tree in Java,
// whose iteration order this does not model: such a bin keeps insertion
// order here, and exact is false. Topic ids and partition numbers
// hardly ever collide so (9 partitions of one request equal modulo 64 or
// more, or 9 topic ids whose hashes are).
func javaHashOrder(hashes []int32) (order []int, exact bool) {
	spread := func(h int32) uint32 { u := uint32(h); return u ^ u>>16 }
	n := 16
	table := make([][]int, n)
	size := 0
	exact = true
	resize := func() {
		next := make([][]int, 2*n)
		for i, bin := range table {
			for _, k := range bin {
				if spread(hashes[k])&uint32(n) == 0 {
					next[i] = append(next[i], k)
				} else {
					next[i+n] = append(next[i+n], k)
				}
			}
		}
		table, n = next, 2*n
	}
	for k, h := range hashes {
		i := spread(h) & uint32(n-1)
		table[i] = append(table[i], k)
		if len(table[i]) >= 9 {
			if n < 64 {
				resize() // treeifyBin on a small table
			} else {
				exact = false
			}
		}
		size++
		if size > n*3/4 {
			resize()
		}
	}
	order = make([]int, 0, len(hashes))
	for _, bin := range table {
		order = append(order, bin...)
	}
	return order, exact
}
