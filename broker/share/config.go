package share

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Config holds the group configs a share partition follows.
type Config struct {
	// MaxDeliveryCount is share.delivery.count.limit
	// (group.share.delivery.count.limit, default 5).
	MaxDeliveryCount int
	// MaxInFlightRecords is share.partition.max.record.locks
	// (group.share.partition.max.record.locks, default 2000).
	MaxInFlightRecords int
	// LockDuration is share.record.lock.duration.ms
	// (group.share.record.lock.duration.ms, default 30s).
	LockDuration time.Duration
	// RenewEnabled is share.renew.acknowledge.enable (default true).
	RenewEnabled bool
}

// DefaultConfig returns Kafka 4.4's defaults.
func DefaultConfig() Config {
	return Config{MaxDeliveryCount: 5, MaxInFlightRecords: 2000, LockDuration: 30 * time.Second, RenewEnabled: true}
}

// Error is a refusal with its Kafka error code and Kafka's message.
type Error struct {
	Code    *kerr.Error
	Message string
}

func (e *Error) Error() string { return "share: " + e.Message }

// Unwrap returns the Kafka error, so errors.Is(err, kerr.InvalidRecordState) works.
func (e *Error) Unwrap() error { return e.Code }

func invalidRecordState(msg string) *Error { return &Error{kerr.InvalidRecordState, msg} }
func invalidRequest(msg string) *Error     { return &Error{kerr.InvalidRequest, msg} }

// ResetKind is a share.auto.offset.reset strategy.
type ResetKind int8

// The strategies.
const (
	ResetLatest ResetKind = iota
	ResetEarliest
	ResetByDuration
)

// AutoOffsetReset is a parsed share.auto.offset.reset: where a share
// partition with no persisted start offset begins.
type AutoOffsetReset struct {
	Kind     ResetKind
	Duration time.Duration // for ResetByDuration
}

// ErrAutoOffsetReset is returned for a share.auto.offset.reset value
// Kafka refuses.
var ErrAutoOffsetReset = errors.New("share: invalid share.auto.offset.reset")

// ParseAutoOffsetReset parses "earliest", "latest" or
// "by_duration:<ISO-8601 duration>" as ShareGroupAutoOffsetResetStrategy
// does (the name is case sensitive, the duration is java.time.Duration's
// PnDTnHnMn.nS and may not be negative).
func ParseAutoOffsetReset(s string) (AutoOffsetReset, error) {
	switch s {
	case "earliest":
		return AutoOffsetReset{Kind: ResetEarliest}, nil
	case "latest":
		return AutoOffsetReset{Kind: ResetLatest}, nil
	case "by_duration":
		return AutoOffsetReset{}, fmt.Errorf("%w: <:duration> part is missing in by_duration auto offset reset strategy", ErrAutoOffsetReset)
	}
	iso, ok := strings.CutPrefix(s, "by_duration:")
	if !ok {
		return AutoOffsetReset{}, fmt.Errorf("%w: unknown strategy %q", ErrAutoOffsetReset, s)
	}
	d, err := parseISODuration(iso)
	if err != nil {
		return AutoOffsetReset{}, fmt.Errorf("%w: unable to parse duration string in by_duration offset reset strategy", ErrAutoOffsetReset)
	}
	if d < 0 {
		return AutoOffsetReset{}, fmt.Errorf("%w: negative duration is not supported in by_duration offset reset strategy", ErrAutoOffsetReset)
	}
	return AutoOffsetReset{Kind: ResetByDuration, Duration: d}, nil
}

// parseISODuration parses java.time.Duration.parse's form:
// [+-]P[nD][T[nH][nM][n[.f]S]], case insensitive, each number signed,
// at least one part, nothing empty after T. Durations beyond Go's range
// are refused.
func parseISODuration(s string) (time.Duration, error) {
	errBad := errors.New("bad duration")
	u := strings.ToUpper(s)
	neg := false
	if u != "" && (u[0] == '+' || u[0] == '-') {
		neg = u[0] == '-'
		u = u[1:]
	}
	if !strings.HasPrefix(u, "P") {
		return 0, errBad
	}
	u = u[1:]
	datePart, timePart, hasT := strings.Cut(u, "T")
	if hasT && timePart == "" {
		return 0, errBad
	}
	var total float64 // seconds
	parts := 0
	if datePart != "" {
		n, ok := strings.CutSuffix(datePart, "D")
		if !ok {
			return 0, errBad
		}
		v, err := parseSignedInt(n)
		if err != nil {
			return 0, errBad
		}
		total += float64(v) * 86400
		parts++
	}
	rest := timePart
	for _, unit := range []struct {
		suffix  byte
		seconds float64
	}{{'H', 3600}, {'M', 60}, {'S', 1}} {
		i := strings.IndexByte(rest, unit.suffix)
		if i < 0 {
			continue
		}
		num := rest[:i]
		rest = rest[i+1:]
		if unit.suffix == 'S' {
			whole, frac, hasFrac := strings.Cut(strings.ReplaceAll(num, ",", "."), ".")
			v, err := parseSignedInt(whole)
			if err != nil || (hasFrac && (len(frac) > 9 || !allDigits(frac))) {
				return 0, errBad
			}
			f := 0.0
			if hasFrac && frac != "" {
				fv, _ := strconv.ParseFloat("0."+frac, 64)
				f = fv
				if strings.HasPrefix(whole, "-") {
					f = -f
				}
			}
			total += float64(v) + f
		} else {
			v, err := parseSignedInt(num)
			if err != nil {
				return 0, errBad
			}
			total += float64(v) * unit.seconds
		}
		parts++
	}
	if rest != "" || parts == 0 {
		return 0, errBad
	}
	if neg {
		total = -total
	}
	if math.Abs(total) > float64(math.MaxInt64/int64(time.Second)) {
		return 0, errBad
	}
	return time.Duration(total * float64(time.Second)), nil
}

func parseSignedInt(s string) (int64, error) {
	d := strings.TrimLeft(s, "+-")
	if d == "" || len(s)-len(d) > 1 || !allDigits(d) {
		return 0, errors.New("bad number")
	}
	return strconv.ParseInt(s, 10, 64)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// LogOffsets are the log's offsets a share partition without a persisted
// start offset begins from (SharePartition.startOffsetDuringInitialization).
type LogOffsets struct {
	Earliest int64 // ListOffsets for EARLIEST_TIMESTAMP: the log start offset
	Latest   int64 // ListOffsets for LATEST_TIMESTAMP
	// ForTimestamp is ListOffsets for a timestamp (milliseconds): the
	// first offset whose timestamp is at least ts.
	ForTimestamp func(ts int64) int64
}

// initialStart resolves the start offset from the reset strategy.
func (r AutoOffsetReset) initialStart(log LogOffsets, now time.Time) int64 {
	switch r.Kind {
	case ResetEarliest:
		return log.Earliest
	case ResetByDuration:
		if log.ForTimestamp == nil {
			return log.Latest
		}
		return log.ForTimestamp(now.Add(-r.Duration).UnixMilli())
	}
	return log.Latest
}
