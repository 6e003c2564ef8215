package clustertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestFollowerWithFullDisk gives node 3 a small tmpfs as its data dir and
// makes it a follower (never the preferred leader) of every partition,
// then fills that file system while acks=all producers write. Node 3 must
// leave every ISR (its appends fail), the leaders keep acknowledging with
// the two others (min.insync.replicas=2), and once space is freed and
// node 3 restarted (a failed log dir stays offline until a restart, as in
// Kafka) it catches up; nothing acknowledged is lost and the replicas end
// byte-identical.
func TestFollowerWithFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a full disk is a small tmpfs mounted as one node's data dir, which needs root")
	}
	dirs := []string{filepath.Join(t.TempDir(), "node-1"), filepath.Join(t.TempDir(), "node-2"), mountTmpfs(t, 64<<20)}
	cfg := loopbackConfig(t, 3)
	cfg.dataDirs = dirs
	c := startCluster(t, cfg)
	const full = 3
	c.createTopicAssigned([][]int32{{1, 2, 3}, {2, 1, 3}, {1, 2, 3}})
	w := startWorkload(t, c, "diskfull")
	w.waitAcks(c, 300, "before the disk fills")
	filler := fillDisk(t, dirs[full-1], 32<<10)
	c.waitFor(fmt.Sprintf("node %d to leave every ISR", full), 120*time.Second, func() bool {
		for p := range int32(partitions) {
			st, ok := c.partition(topic, p)
			if !ok || slices.Contains(st.isr, full) {
				return false
			}
		}
		return true
	})
	t.Logf("node %d's disk is full (process running: %v); it left every ISR", full, c.node(full).running())
	w.waitAcks(c, 500, fmt.Sprintf("node %d's disk full", full))
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	c.kill9(c.node(full))
	c.restart(c.node(full))
	c.waitFullISR(topic, partitions)
	w.waitAcks(c, 200, fmt.Sprintf("node %d restarted with free space", full))
	sum := verify(t, c, w)
	t.Logf("a follower's disk filled: %v; no anomaly", sum)
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory, unmounted
// when the test ends (after the cluster's processes are killed: cleanups
// run last-registered first).
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file into dir until the file system has at most leave
// bytes free, and returns its path.
func fillDisk(t *testing.T, dir string, leave int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for left := free - leave; left > 0; {
		n := min(left, int64(len(chunk)))
		if _, err := f.Write(chunk[:n]); err != nil {
			break // ENOSPC: the nodes wrote meanwhile
		}
		left -= n
	}
	if err := syscall.Statfs(dir, &st); err == nil {
		t.Logf("filled %s: %d bytes free", dir, int64(st.Bavail)*st.Bsize)
	}
	return path
}
