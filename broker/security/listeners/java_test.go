package listeners

import (
	"slices"
	"testing"
)

func TestSplitCommaIsJavaSplit(t *testing.T) {
	for _, tc := range []struct {
		in           string
		keepTrailing bool
		want         []string
	}{
		{"a,b", false, []string{"a", "b"}},
		{"a , b", false, []string{"a", "b"}},
		{" a , b ", false, []string{" a", "b "}},
		{"a,,b", false, []string{"a", "", "b"}},
		{"a,b,,", false, []string{"a", "b"}},
		{"a,b,,", true, []string{"a", "b", "", ""}},
		{",a", false, []string{"", "a"}},
		{",", false, []string{}},
		{",", true, []string{"", ""}},
		{"", false, []string{""}},
		{"a\x0b,\x0bb", false, []string{"a", "b"}},
		{"abc", true, []string{"abc"}},
	} {
		if got := splitComma(tc.in, tc.keepTrailing); !slices.Equal(got, tc.want) {
			t.Errorf("splitComma(%q, %v) = %q, want %q", tc.in, tc.keepTrailing, got, tc.want)
		}
	}
}

func TestHashMapOrderIsJavaHashMap(t *testing.T) {
	// The orders a java.util.HashMap<String, String> iterates these keys
	// in (printed by Java 17 for each set, inserted in the order given).
	for _, tc := range []struct{ keys, want []string }{
		{[]string{"CLIENT", "client", "CONTROLLER"}, []string{"CONTROLLER", "client", "CLIENT"}},
		{[]string{"L1", "L2", "L3", "L4", "L5", "L6", "L7", "L8", "L9", "L10", "L11", "L12", "L13", "L14"},
			[]string{"L1", "L2", "L3", "L4", "L5", "L6", "L10", "L7", "L8", "L12", "L9", "L11", "L14", "L13"}},
	} {
		hashes := make([]int32, len(tc.keys))
		for i, k := range tc.keys {
			hashes[i] = javaStringHash(k)
		}
		var got []string
		for _, i := range hashMapOrder(hashes) {
			got = append(got, tc.keys[i])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("order of %q = %q, Java's is %q", tc.keys, got, tc.want)
		}
	}
	if h := javaStringHash("PLAINTEXT"); h != 464861655 {
		t.Errorf("hash of PLAINTEXT = %d, Java's is 464861655", h)
	}
}

func TestInetValidators(t *testing.T) {
	for _, tc := range []struct {
		host       string
		ipv4, ipv6 bool
	}{
		{"127.0.0.1", true, false},
		{"255.255.255.255", true, false},
		{"256.0.0.1", false, false},
		{"01.2.3.4", false, false},
		{"1.2.3", false, false},
		{"::1", false, true},
		{"::", false, true},
		{"fe80::1%eth0", false, true},
		{"fe80::1%", false, false},
		{"1:2:3:4:5:6:7:8", false, true},
		{"1:2:3:4:5:6:7:8:9", false, false},
		{"1::2::3", false, false},
		{":1::", false, false},
		{"::ffff:1.2.3.4", false, true},
		{"::ffff:1.2.3.400", false, false},
		{"12345::", false, false},
		{"host", false, false},
		{"", false, false},
	} {
		if got := isValidInet4(tc.host); got != tc.ipv4 {
			t.Errorf("isValidInet4(%q) = %v", tc.host, got)
		}
		if got := isValidInet6(tc.host); got != tc.ipv6 {
			t.Errorf("isValidInet6(%q) = %v", tc.host, got)
		}
	}
}

func TestEndpointAddress(t *testing.T) {
	for _, tc := range []struct {
		e    Endpoint
		want string
	}{
		{Endpoint{Host: "", Port: 9092}, ":9092"},
		{Endpoint{Host: "broker1", Port: 9092}, "broker1:9092"},
		{Endpoint{Host: "::1", Port: 9092}, "[::1]:9092"},
		{Endpoint{Host: "fe80::1%eth0", Port: 0}, "[fe80::1%eth0]:0"},
	} {
		if got := tc.e.Address(); got != tc.want {
			t.Errorf("%+v.Address() = %q, want %q", tc.e, got, tc.want)
		}
	}
}
