package listeners

import (
	"regexp"
	"slices"
	"strconv"
)

// listenerPattern is SocketServerConfigs' URI_PARSE_REGEXP, matched
// against a whole entry. Java's . excludes line terminators; so does the
// class here.
var listenerPattern = regexp.MustCompile(`^([^\n\r\x{85}\x{2028}\x{2029}]*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$`)

// parseEndpoints is AbstractKafkaConfig.listenerListToEndPoints: each
// entry parsed, its protocol looked up, then the names (and, with
// distinctPorts, the ports) checked. Every failure is wrapped as Kafka
// wraps it.
func parseEndpoints(entries []string, protocols map[string]SecurityProtocol, distinctPorts bool) ([]Endpoint, error) {
	fail := func(msg string) error {
		return illegalArgument("Error creating broker listeners from '%s': %s", javaList(entries), msg)
	}
	var out []Endpoint
	for _, entry := range entries {
		m := listenerPattern.FindStringSubmatch(entry)
		if m == nil {
			return nil, fail("Unable to parse " + entry + " to a broker endpoint")
		}
		if m[1] == "" {
			return nil, fail("The provided listener name is null or empty string")
		}
		name := javaUpper(m[1])
		port, err := javaParseInt(m[3])
		if err != nil {
			return nil, fail(err.Error())
		}
		proto, ok := protocols[name]
		if !ok {
			return nil, fail("No security protocol defined for listener " + name)
		}
		out = append(out, Endpoint{Listener: name, Protocol: proto, Host: m[2], Port: int(port)})
	}
	names := map[string]bool{}
	for _, e := range out {
		names[e.Listener] = true
	}
	if len(names) != len(out) {
		return nil, fail("Each listener must have a different name, listeners: " + javaList(entries))
	}
	if !distinctPorts {
		return out, nil
	}
	// Group the listeners by port (0 excepted) in HashMap<Integer> order.
	var ports []int
	byPort := map[int][]Endpoint{}
	for _, e := range out {
		if e.Port == 0 {
			continue
		}
		if _, seen := byPort[e.Port]; !seen {
			ports = append(ports, e.Port)
		}
		byPort[e.Port] = append(byPort[e.Port], e)
	}
	hashes := make([]int32, len(ports))
	for i, port := range ports {
		hashes[i] = int32(port)
	}
	for _, i := range hashMapOrder(hashes) {
		port := ports[i]
		group := byPort[port]
		if len(group) < 2 {
			continue
		}
		var withIP, withoutIP []Endpoint
		for _, e := range group {
			if e.Host != "" && isValidInet(e.Host) {
				withIP = append(withIP, e)
			} else {
				withoutIP = append(withoutIP, e)
			}
		}
		if len(withoutIP) > 1 {
			return nil, fail("Each listener must have a different port, listeners: " + javaList(entries))
		}
		switch len(withIP) {
		case 0:
		case 2:
			a, b := withIP[0].Host, withIP[1].Host
			if !(isValidInet4(a) && isValidInet6(b) || isValidInet6(a) && isValidInet4(b)) || len(withoutIP) > 0 {
				return nil, fail("If you have two listeners on the same port then one needs to be IPv4 and the other IPv6, listeners: " +
					javaList(entries) + ", port: " + strconv.Itoa(port))
			}
		default:
			return nil, fail("Each listener must have a different port unless exactly one listener has an IPv4 address and the other IPv6 address, listeners: " +
				javaList(entries) + ", port: " + strconv.Itoa(port))
		}
	}
	return out, nil
}

// endpointNames returns the distinct listener names of eps in order.
func endpointNames(eps []Endpoint) []string {
	var out []string
	for _, e := range eps {
		if !slices.Contains(out, e.Listener) {
			out = append(out, e.Listener)
		}
	}
	return out
}
