package broker

// The HTTP listener for operators (Config.HTTPListen): /metrics in the
// Prometheus text format, /healthz and /readyz. It opens first in Start, so
// probes get an answer (503 from /readyz) while the logs and the group
// coordinator load, and closes last in Close.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// startHTTP opens the HTTP listener, if one is configured.
func (b *Broker) startHTTP(ctx context.Context) error {
	if b.cfg.HTTPListen == "" {
		return nil
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", b.cfg.HTTPListen)
	if err != nil && b.cfg.HTTPListenIsDefault && errors.Is(err, syscall.EADDRINUSE) {
		host, _, _ := net.SplitHostPort(b.cfg.HTTPListen)
		free := net.JoinHostPort(host, "0")
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", free); err == nil {
			b.log.Warn("the default HTTP address is taken, so the HTTP listener uses a free port instead; set --http-listen to choose one",
				"default", b.cfg.HTTPListen, "listen", ln.Addr().String())
		}
	}
	if err != nil {
		return fmt.Errorf("broker: http listen: %w", err)
	}
	// Errors of the HTTP server and of metric collection go to the broker's
	// logger, so --log-format json stays JSON.
	errorLog := slog.NewLogLogger(b.log.Handler(), slog.LevelWarn)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(b.metrics.registry, promhttp.HandlerOpts{
		ErrorLog:      errorLog,
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !b.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready\n")
	})
	b.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog}
	b.httpListener = ln
	b.httpDone = make(chan struct{})
	go func() {
		defer close(b.httpDone)
		if err := b.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.log.Error("http server failed", "err", err)
		}
	}()
	b.log.Info("http listening", "listen", ln.Addr().String())
	return nil
}

// stopHTTP closes the HTTP listener and waits, for a few seconds at most,
// for the requests being served; then it closes their connections.
func (b *Broker) stopHTTP() {
	if b.http == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.http.Shutdown(ctx); err != nil {
		b.http.Close()
	}
	<-b.httpDone
}

// HTTPAddr returns the address the HTTP listener is bound to, host:port, or
// "" when Config.HTTPListen is empty.
func (b *Broker) HTTPAddr() string {
	if b.httpListener == nil {
		return ""
	}
	return b.httpListener.Addr().String()
}
