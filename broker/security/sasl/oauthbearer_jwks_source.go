package sasl

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// maxJWKSSize bounds a JWKS document, fetched or read: a provider's set
// is a few kilobytes.
const maxJWKSSize = 1 << 20

// The missing-kid cache of Kafka's RefreshingHttpsJwks: a kid the keys
// lack starts one refetch, and again only after missingKeyIDRetry.
const (
	missingKeyIDEntries = 16
	missingKeyIDRetry   = 60 * time.Second
)

// StaticKeys is a JWKS read once, as Kafka's JwksFileVerificationKeyResolver
// (a file: URL).
type StaticKeys []jose.JSONWebKey

// ReadJWKSFile reads the JWKS file at path.
func ReadJWKSFile(path string, logger *slog.Logger) (StaticKeys, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	doc, err := io.ReadAll(io.LimitReader(f, maxJWKSSize+1))
	if err != nil {
		return nil, err
	}
	if len(doc) > maxJWKSSize {
		return nil, fmt.Errorf("%s: a JWKS larger than %d bytes", path, maxJWKSSize)
	}
	keys, skipped, err := ParseJWKS(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	for _, s := range skipped {
		logger.Warn("gregor: JWKS key skipped", "location", path, "reason", s)
	}
	return StaticKeys(keys), nil
}

// Keys is the file's keys.
func (s StaticKeys) Keys() []jose.JSONWebKey { return s }

// MissingKey does nothing: a file is read once, as in Kafka.
func (StaticKeys) MissingKey(string) {}

// RemoteKeysConfig configures RemoteKeys: Kafka's
// sasl.oauthbearer.jwks.endpoint.* settings.
type RemoteKeysConfig struct {
	URL string
	// Refresh is jwks.endpoint.refresh.ms: the interval of scheduled
	// refetches.
	Refresh time.Duration
	// RetryBackoff and RetryBackoffMax are jwks.endpoint.retry.backoff.ms
	// and .max.ms: a failed refetch is tried again after RetryBackoff,
	// doubling, until RetryBackoffMax has passed.
	RetryBackoff, RetryBackoffMax time.Duration
	// Client fetches the JWKS; nil means one with a 10 s timeout.
	Client *http.Client
	Logger *slog.Logger
}

// RemoteKeys is a JWKS fetched over HTTP(S) and kept fresh, as Kafka's
// RefreshingHttpsJwks: refetched every Refresh, and soon when a token
// names a kid it lacks (once a minute per kid at most); a refetch that
// fails keeps the keys it had.
type RemoteKeys struct {
	cfg RemoteKeysConfig

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	missing map[string]time.Time // kid -> when it may start a refetch again
	now     func() time.Time

	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// NewRemoteKeys fetches the JWKS once (an error if that fails, as Kafka's
// broker does not start then) and starts refreshing it until Close.
func NewRemoteKeys(cfg RemoteKeysConfig) (*RemoteKeys, error) {
	if cfg.Refresh <= 0 {
		return nil, fmt.Errorf("the JWKS refresh interval must be positive")
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &RemoteKeys{cfg: cfg, missing: map[string]time.Time{}, now: time.Now,
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	keys, err := r.fetch(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("Could not refresh JWKS: %v", err)
	}
	r.keys, r.cancel = keys, cancel
	go r.run(ctx)
	cfg.Logger.Info("gregor: JWKS validation key refresh started", "location", cfg.URL, "keys", len(keys), "refresh_ms", cfg.Refresh.Milliseconds())
	return r, nil
}

// Keys is the keys of the last successful fetch.
func (r *RemoteKeys) Keys() []jose.JSONWebKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys
}

// MissingKey starts a refetch for a kid the keys lack, unless that kid
// started one within the last minute (Kafka's maybeExpediteRefresh). The
// token that named it is refused all the same: the refetch is for the
// next attempt.
func (r *RemoteKeys) MissingKey(kid string) {
	r.mu.Lock()
	now := r.now()
	if next, ok := r.missing[kid]; ok && now.Before(next) {
		r.mu.Unlock()
		return
	}
	if _, ok := r.missing[kid]; !ok && len(r.missing) >= missingKeyIDEntries {
		// Drop the entry that may retry soonest, as Kafka's LRU drops
		// its eldest.
		var oldest string
		for k, t := range r.missing {
			if oldest == "" || t.Before(r.missing[oldest]) {
				oldest = k
			}
		}
		delete(r.missing, oldest)
	}
	r.missing[kid] = now.Add(missingKeyIDRetry)
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default: // a refetch is already due
	}
}

// Close stops the refreshing.
func (r *RemoteKeys) Close() {
	r.cancel()
	<-r.done
}

func (r *RemoteKeys) run(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.cfg.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.kick:
		}
		r.refresh(ctx)
	}
}

// refresh refetches with retries; failing, it keeps the keys it had.
func (r *RemoteKeys) refresh(ctx context.Context) {
	start := time.Now()
	backoff := r.cfg.RetryBackoff
	for attempt := 1; ; attempt++ {
		keys, err := r.fetch(ctx)
		if err == nil {
			r.mu.Lock()
			for _, k := range keys {
				delete(r.missing, k.KeyID)
			}
			r.keys = keys
			r.mu.Unlock()
			r.cfg.Logger.Debug("gregor: JWKS refreshed", "location", r.cfg.URL, "keys", len(keys))
			return
		}
		left := r.cfg.RetryBackoffMax - time.Since(start)
		if ctx.Err() != nil || left <= 0 || backoff <= 0 {
			r.cfg.Logger.Warn("gregor: JWKS refresh failed; keeping the keys it had", "location", r.cfg.URL, "attempts", attempt, "error", err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(backoff, left)):
		}
		backoff *= 2
	}
}

// fetch gets and decodes the JWKS once.
func (r *RemoteKeys) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.cfg.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	doc, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSSize+1))
	if err != nil {
		return nil, err
	}
	if len(doc) > maxJWKSSize {
		return nil, fmt.Errorf("a JWKS larger than %d bytes", maxJWKSSize)
	}
	keys, skipped, err := ParseJWKS(doc)
	if err != nil {
		return nil, err
	}
	for _, s := range skipped {
		r.cfg.Logger.Warn("gregor: JWKS key skipped", "location", r.cfg.URL, "reason", s)
	}
	return keys, nil
}
