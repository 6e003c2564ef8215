package raftnode

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ParseVoters parses a quorum string in the syntax of Kafka's
// controller.quorum.voters: "1@host:port,2@host:port,3@host:port". Ids are
// Kafka node ids: non-negative int32s, unique; every address has a host and
// a port. (Raft ids must be positive, so the node uses id+1 inside raft.)
func ParseVoters(s string) (map[int32]string, error) {
	voters := map[int32]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		idStr, addr, ok := strings.Cut(part, "@")
		if !ok {
			return nil, fmt.Errorf("raftnode: voter %q is not id@host:port", part)
		}
		n, err := strconv.ParseUint(idStr, 10, 31)
		if err != nil {
			return nil, fmt.Errorf("raftnode: voter %q: the id must be a non-negative integer", part)
		}
		id := int32(n)
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("raftnode: voter %q: the address must be host:port", part)
		}
		if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
			return nil, fmt.Errorf("raftnode: voter %q: bad port", part)
		}
		if _, dup := voters[id]; dup {
			return nil, fmt.Errorf("raftnode: voter id %d appears twice", id)
		}
		voters[id] = addr
	}
	if len(voters) == 0 {
		return nil, fmt.Errorf("raftnode: no voters in %q", s)
	}
	return voters, nil
}
