package clustertest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A netnsLab runs each node in a network namespace of its own, joined to
// the test's (root) namespace through a veth pair on a bridge: node i has
// address <subnet>.(11+i) on its eth0, the bridge <subnet>.1, so the test's
// clients reach every node and the nodes reach each other. isolate cuts a
// node off from its peers (blackhole routes in its namespace, so that
// nothing it sends them arrives) while the test's clients still reach it:
// an isolated leader still gets produces, it cannot replicate them.
type netnsLab struct {
	t        *testing.T
	prefix   string // of every name: gct-<pid>
	subnet   string // the first three octets
	bridge   string
	ns       []string
	isolated map[int][]string // node index: its blackhole routes
}

// newNetnsLab sets up n namespaces, or skips the test when it cannot: not
// root, or no working `ip netns`.
func newNetnsLab(t *testing.T, n int) *netnsLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network isolation needs root (ip netns, veth pairs)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("network isolation needs the ip command (iproute2)")
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		t.Skipf("ip netns is unavailable: %v: %s", err, out)
	}
	removeStaleNetns(t)
	pid := os.Getpid()
	lab := &netnsLab{
		t:        t,
		prefix:   fmt.Sprintf("gct-%d", pid),
		subnet:   fmt.Sprintf("10.231.%d", 100+pid%150),
		bridge:   fmt.Sprintf("gctb%d", pid),
		isolated: map[int][]string{},
	}
	t.Cleanup(lab.remove)
	lab.ip("link", "add", lab.bridge, "type", "bridge")
	lab.ip("addr", "add", lab.subnet+".1/24", "dev", lab.bridge)
	lab.ip("link", "set", lab.bridge, "up")
	for i := range n {
		ns := fmt.Sprintf("%s-%d", lab.prefix, i)
		host, peer := fmt.Sprintf("gctv%dn%d", pid, i), fmt.Sprintf("gctp%dn%d", pid, i)
		lab.ip("netns", "add", ns)
		lab.ns = append(lab.ns, ns)
		lab.ip("link", "add", host, "type", "veth", "peer", "name", peer)
		lab.ip("link", "set", peer, "netns", ns)
		lab.ip("-n", ns, "link", "set", peer, "name", "eth0")
		lab.ip("-n", ns, "addr", "add", lab.addr(i)+"/24", "dev", "eth0")
		lab.ip("-n", ns, "link", "set", "eth0", "up")
		lab.ip("-n", ns, "link", "set", "lo", "up")
		lab.ip("link", "set", host, "master", lab.bridge)
		lab.ip("link", "set", host, "up")
	}
	return lab
}

// addr is node index i's address.
func (lab *netnsLab) addr(i int) string { return fmt.Sprintf("%s.%d", lab.subnet, 11+i) }

// config places the nodes in the namespaces, on ports 9092 (Kafka) and
// 9093 (controller) of their own address.
func (lab *netnsLab) config() clusterConfig {
	cfg := clusterConfig{ports: func(int) (int, int) { return 9092, 9093 }}
	for i, ns := range lab.ns {
		cfg.hosts = append(cfg.hosts, lab.addr(i))
		cfg.wraps = append(cfg.wraps, []string{"ip", "netns", "exec", ns})
	}
	return cfg
}

// isolate cuts node index i off from every other node, both ways: its
// packets to them are dropped in its namespace, and so its answers to
// theirs.
func (lab *netnsLab) isolate(i int) {
	lab.t.Helper()
	lab.t.Logf("isolating node %d (%s) from its peers", i+1, lab.addr(i))
	for j := range lab.ns {
		if j != i {
			route := lab.addr(j) + "/32"
			lab.ip("-n", lab.ns[i], "route", "add", "blackhole", route)
			lab.isolated[i] = append(lab.isolated[i], route)
		}
	}
}

// heal undoes isolate(i).
func (lab *netnsLab) heal(i int) {
	lab.t.Helper()
	lab.t.Logf("healing node %d's network", i+1)
	for _, route := range lab.isolated[i] {
		lab.ip("-n", lab.ns[i], "route", "del", "blackhole", route)
	}
	delete(lab.isolated, i)
}

// ip runs ip with args, failing the test if it fails.
func (lab *netnsLab) ip(args ...string) {
	lab.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		lab.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// remove deletes the namespaces (their veth ends go with them, and so the
// host ends) and the bridge. The cluster's processes are killed before,
// as cleanups run last-registered first.
func (lab *netnsLab) remove() {
	for _, ns := range lab.ns {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			lab.t.Logf("ip netns del %s: %v: %s", ns, err, out)
		}
	}
	exec.Command("ip", "link", "del", lab.bridge).Run()
}

// removeStaleNetns removes the namespaces and bridges of test binaries
// that died without cleaning up (their names carry their pid).
func removeStaleNetns(t *testing.T) {
	alive := func(name, prefix string) bool {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			return true // not ours
		}
		digits := rest
		if i := strings.IndexAny(rest, "-n"); i >= 0 {
			digits = rest[:i]
		}
		pid, err := strconv.Atoi(digits)
		if err != nil {
			return true
		}
		return syscall.Kill(pid, 0) == nil
	}
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
			if name != "" && !alive(name, "gct-") {
				t.Logf("removing stale namespace %s", name)
				exec.Command("ip", "netns", "del", name).Run()
			}
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show", "type", "bridge").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(fields[1], ":"), "@")
			if !alive(name, "gctb") {
				t.Logf("removing stale bridge %s", name)
				exec.Command("ip", "link", "del", name).Run()
			}
		}
	}
}
