// Package lint holds checks of the module as a whole that run as ordinary
// tests under go test ./...: staticcheck over every package, the direction
// of the imports between the project's packages as docs/architecture.md
// and the doc.go files state them, and the files that comments and docs
// cite. It has no code of its own.
package lint

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// moduleRoot returns the directory holding go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(goTool(t), "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" {
		t.Fatal("not inside a module: go env GOMOD is empty")
	}
	return filepath.Dir(gomod)
}

// goTool returns the go command running the tests.
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	return p
}
