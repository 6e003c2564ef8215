package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// startGregorLogging runs the binary with args and returns the log lines
// written up to and including its readiness line.
func startGregorLogging(t *testing.T, args string) []string {
	t.Helper()
	_, lines := startUntilReady(t, "gregor", args)
	return lines
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestServeExposesMetricsOnHTTPListen runs the binary with --http-listen and
// --log-format json: every log line is a JSON object, /readyz answers 200
// and /metrics counts the requests a client made.
func TestServeExposesMetricsOnHTTPListen(t *testing.T) {
	addr, httpAddr := freePort(t), freePort(t)
	lines := startGregorLogging(t, "serve --listen "+addr+" --data-dir "+t.TempDir()+" --http-listen "+httpAddr+" --log-format json")
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", line, err)
		}
		if rec["msg"] == nil || rec["level"] == nil || rec["time"] == nil {
			t.Fatalf("log line lacks msg, level or time: %q", line)
		}
	}

	if code, _ := get(t, "http://"+httpAddr+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz: %d", code)
	}
	if code, _ := get(t, "http://"+httpAddr+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := newTestClient(t, addr)
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, "http://"+httpAddr+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{`gregor_requests_total{api="ApiVersions"}`, `gregor_requests_total{api="Metadata"}`, "go_goroutines", "gregor_connections_accepted_total"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestServeTextLogsByDefault checks the default log format, slog's
// key=value text.
func TestServeTextLogsByDefault(t *testing.T) {
	lines := startGregorLogging(t, "serve --listen "+freePort(t)+" --data-dir "+t.TempDir()+" --http-listen 127.0.0.1:0")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "time=") || !strings.Contains(last, `msg="gregor: ready"`) {
		t.Fatalf("readiness line %q is not slog text", last)
	}
}

func TestServeRefusesBadObservabilityFlags(t *testing.T) {
	busy := freePortHeld(t)
	// Without "serve" the flags belong to the app; they are honoured too.
	for _, args := range []string{"serve --log-format yaml", "--log-format yaml", "--log-level loud",
		"serve --http-listen " + busy, "--http-listen " + busy, "serve --http-listen not-an-address"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0])
		cmd.Env = append(os.Environ(), "GREGOR_RUN_MAIN="+args+" --listen 127.0.0.1:0 --data-dir "+t.TempDir())
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil || timedOut {
			t.Fatalf("%q did not fail at start (%v): %s", args, err, out)
		}
	}
}

// freePortHeld returns a loopback address that stays taken until the test
// ends.
func freePortHeld(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}
