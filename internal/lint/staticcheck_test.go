package lint

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestStaticcheck runs staticcheck (a tool dependency in go.mod, configured
// by staticcheck.conf at the root) over the whole module and fails with its
// findings, once for each build the tests have: the default one and the
// one with the cluster tag, which adds broker's cluster tests (see
// docs/architecture.md, Tests). Each build is checked on its own, so a
// helper used only by the cluster tests must sit in a file with their tag.
// It type-checks every package, so it takes about a minute from a cold
// cache; -short skips it.
func TestStaticcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping staticcheck over the whole module (about a minute); go test ./internal/lint runs it")
	}
	for _, tags := range []string{"", "cluster"} {
		args := []string{"tool", "staticcheck"}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		args = append(args, "./...")
		cmd := exec.Command(goTool(t), args...)
		cmd.Dir = moduleRoot(t)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("staticcheck -tags %q ./... took %v", tags, time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
