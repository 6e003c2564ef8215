package listeners

import (
	"strconv"
	"strings"
	"unicode/utf16"
)

// javaTrim is Java's String.trim: it strips every char up to U+0020 from
// both ends.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// isJavaSpace reports whether c is in Java's regex class \s.
func isJavaSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\x0b' || c == '\f' || c == '\r'
}

// splitComma is Java's s.split("\\s*,\\s*", limit) with limit -1 (keep
// trailing empty strings) or 0 (drop them). A zero-length input gives one
// empty string, as in Java.
func splitComma(s string, keepTrailing bool) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] != ',' {
			continue
		}
		// The match extends left over spaces (not past start) and right.
		l := i
		for l > start && isJavaSpace(s[l-1]) {
			l--
		}
		r := i + 1
		for r < len(s) && isJavaSpace(s[r]) {
			r++
		}
		out = append(out, s[start:l])
		start = r
		i = r - 1
	}
	if len(out) == 0 {
		return []string{s} // no match: the input itself
	}
	out = append(out, s[start:])
	if !keepTrailing {
		for len(out) > 0 && out[len(out)-1] == "" {
			out = out[:len(out)-1]
		}
	}
	return out
}

// javaList formats a list as Java's List.toString does.
func javaList(items []string) string {
	return "[" + strings.Join(items, ", ") + "]"
}

// javaUpper is toUpperCase(Locale.ROOT) for the names Kafka normalises.
// Non-ASCII letters whose upper case is longer (ß) follow Go's simple
// case mapping, which differs from Java's full mapping.
func javaUpper(s string) string { return strings.ToUpper(s) }

// javaLower is toLowerCase(Locale.ROOT).
func javaLower(s string) string { return strings.ToLower(s) }

// javaStringHash is Java's String.hashCode over the UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// hashMapOrder returns the indexes of keys (distinct, in insertion order)
// in the order a java.util.HashMap with default settings iterates them:
// by bucket of the spread hash in the final table, and by insertion within
// a bucket (a resize splits a bucket's chain in order). Tree bins of eight
// or more colliding keys are not modelled.
func hashMapOrder(hashes []int32) []int {
	capacity := 16
	for float64(len(hashes)) > 0.75*float64(capacity) {
		capacity *= 2
	}
	order := make([]int, len(hashes))
	buckets := make([]int, len(hashes))
	for i, h := range hashes {
		u := uint32(h)
		buckets[i] = int((u ^ (u >> 16)) & uint32(capacity-1))
		order[i] = i
	}
	// A stable insertion sort keeps insertion order within a bucket.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && buckets[order[j-1]] > buckets[order[j]]; j-- {
			order[j-1], order[j] = order[j], order[j-1]
		}
	}
	return order
}

// javaParseInt is Integer.parseInt(s) in base 10, with its error message.
func javaParseInt(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, &Error{Exception: "NumberFormatException", Message: `For input string: "` + s + `"`}
	}
	return int32(n), nil
}

// scalaSet formats a Scala immutable Set of at most four elements (which
// keeps insertion order) as its toString does.
func scalaSet(items []string) string {
	return "Set(" + strings.Join(items, ", ") + ")"
}
