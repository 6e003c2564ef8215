package listeners

import (
	"strconv"
	"strings"
)

// The address checks of Apache Commons Validator's InetAddressValidator,
// which Kafka uses to tell listeners on one port apart.

// isValidInet4 is InetAddressValidator.isValidInet4Address: four dotted
// decimal groups of one to three ASCII digits, each at most 255, without
// leading zeros.
func isValidInet4(s string) bool {
	groups := strings.Split(s, ".")
	if len(groups) != 4 {
		return false
	}
	for _, g := range groups {
		if len(g) < 1 || len(g) > 3 {
			return false
		}
		for i := 0; i < len(g); i++ {
			if g[i] < '0' || g[i] > '9' {
				return false
			}
		}
		n, _ := strconv.Atoi(g)
		if n > 255 || len(g) > 1 && g[0] == '0' {
			return false
		}
	}
	return true
}

// isValidInet6 is InetAddressValidator.isValidInet6Address, with its
// optional /prefix and %zone.
func isValidInet6(s string) bool {
	parts := strings.Split(s, "/")
	if len(parts) > 2 {
		return false
	}
	if len(parts) == 2 {
		if parts[1] == "" {
			return false
		}
		for i := 0; i < len(parts[1]); i++ {
			if parts[1][i] < '0' || parts[1][i] > '9' {
				return false
			}
		}
		if bits, err := strconv.Atoi(parts[1]); err != nil || bits > 255 {
			return false
		}
	}
	parts = strings.Split(parts[0], "%")
	if len(parts) > 2 {
		return false
	}
	if len(parts) == 2 {
		if parts[1] == "" || strings.ContainsAny(parts[1], " \t\n\x0b\f\r/%") {
			return false
		}
	}
	addr := parts[0]
	compressed := strings.Contains(addr, "::")
	if compressed && strings.Index(addr, "::") != strings.LastIndex(addr, "::") {
		return false
	}
	if strings.HasPrefix(addr, ":") && !strings.HasPrefix(addr, "::") ||
		strings.HasSuffix(addr, ":") && !strings.HasSuffix(addr, "::") {
		return false
	}
	octets := javaSplitColon(addr)
	if compressed {
		if strings.HasSuffix(addr, "::") {
			octets = append(octets, "")
		} else if strings.HasPrefix(addr, "::") && len(octets) > 0 {
			octets = octets[1:]
		}
	}
	if len(octets) > 8 {
		return false
	}
	valid, empty := 0, 0
	for i, o := range octets {
		if javaTrim(o) == "" {
			empty++
			if empty > 1 {
				return false
			}
		} else {
			empty = 0
			if i == len(octets)-1 && strings.Contains(o, ".") {
				if !isValidInet4(o) {
					return false
				}
				valid += 2
				continue
			}
			if len(o) > 4 {
				return false
			}
			n, err := strconv.ParseInt(o, 16, 32)
			if err != nil || n < 0 || n > 0xffff {
				return false
			}
		}
		valid++
	}
	return valid <= 8 && (valid >= 8 || compressed)
}

// javaSplitColon is Java's s.split(":"): trailing empty strings dropped.
func javaSplitColon(s string) []string {
	out := strings.Split(s, ":")
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	if len(out) == 0 && s == "" {
		return []string{""}
	}
	return out
}

// isValidInet is InetAddressValidator.isValid.
func isValidInet(s string) bool { return isValidInet4(s) || isValidInet6(s) }
