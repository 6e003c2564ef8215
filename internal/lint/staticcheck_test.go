package lint

import (
	"os/exec"
	"testing"
	"time"
)

// TestStaticcheck runs staticcheck (a tool dependency in go.mod, configured
// by staticcheck.conf at the root) over the whole module and fails with its
// findings. It type-checks every package, so it takes about a minute from a
// cold cache; -short skips it.
func TestStaticcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping staticcheck over the whole module (about a minute); go test ./internal/lint runs it")
	}
	cmd := exec.Command(goTool(t), "tool", "staticcheck", "./...")
	cmd.Dir = moduleRoot(t)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("staticcheck ./... took %v", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("go tool staticcheck ./...: %v\n%s", err, out)
	}
}
