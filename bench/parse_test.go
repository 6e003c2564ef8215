package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseProducerPerf(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    producerPerf
		wantErr bool
	}{
		{
			name: "progress lines then summary",
			out: `1047226 records sent, 209403.0 records/sec (19.97 MB/sec), 1.3 ms avg latency, 215.0 ms max latency.
1283040 records sent, 256556.7 records/sec (24.47 MB/sec), 0.9 ms avg latency, 12.0 ms max latency.
2000000 records sent, 238891.5 records/sec (22.78 MB/sec), 1.04 ms avg latency, 215.00 ms max latency, 1 ms 50th, 2 ms 95th, 6 ms 99th, 31 ms 99.9th.
`,
			want: producerPerf{Records: 2000000, RecordsSec: 238891.5, MBSec: 22.78, AvgMs: 1.04, MaxMs: 215, P50Ms: 1, P99Ms: 6, P999Ms: 31},
		},
		{
			name: "summary only, CRLF",
			out:  "50000 records sent, 12345.6 records/sec (12.06 MB/sec), 10.50 ms avg latency, 300.00 ms max latency, 8 ms 50th, 20 ms 95th, 40 ms 99th, 290 ms 99.9th.\r\n",
			want: producerPerf{Records: 50000, RecordsSec: 12345.6, MBSec: 12.06, AvgMs: 10.5, MaxMs: 300, P50Ms: 8, P99Ms: 40, P999Ms: 290},
		},
		{
			name:    "progress lines only",
			out:     "1047226 records sent, 209403.0 records/sec (19.97 MB/sec), 1.3 ms avg latency, 215.0 ms max latency.\n",
			wantErr: true,
		},
		{name: "empty", out: "", wantErr: true},
		{
			name:    "number out of range",
			out:     "99999999999999999999 records sent, 1.0 records/sec (1.00 MB/sec), 1.00 ms avg latency, 1.00 ms max latency, 1 ms 50th, 1 ms 95th, 1 ms 99th, 1 ms 99.9th.",
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProducerPerf(tt.out)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseConsumerPerf(t *testing.T) {
	header := "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
	tests := []struct {
		name    string
		out     string
		want    consumerPerf
		wantErr bool
	}{
		{
			name: "header and summary",
			out:  header + "2026-11-29 19:00:00:000, 2026-11-29 19:00:04:000, 1024.0000, 256.0000, 1048576, 262144.0000, 3012, 988, 1036.4372, 1061311.7409\n",
			want: consumerPerf{MB: 1024, MBSec: 256, Records: 1048576, RecordsSec: 262144, RebalanceMs: 3012, FetchMs: 988,
				FetchMBSec: 1036.4372, FetchRecSec: 1061311.7409},
		},
		{
			name:    "timeout warning",
			out:     header + "WARNING: Exiting before consuming the expected number of messages: timeout (60000 ms) exceeded. You can use the --timeout option to increase the timeout.\n",
			wantErr: true,
		},
		{name: "no header", out: "2026-11-29 19:00:00:000, 2026-11-29 19:00:04:000, 1, 1, 1, 1, 1, 1, 1, 1\n", wantErr: true},
		{name: "bad number", out: header + "a, b, x, 1, 1, 1, 1, 1, 1, 1\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConsumerPerf(tt.out)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseProcStat(t *testing.T) {
	// A real line's shape, with a command name holding ") (" to show fields
	// are counted from the last parenthesis.
	fields := "S 1 1234 1234 0 -1 4194560 5000 0 0 0 731 112 0 0 20 0 40 0 98765 4096000 2500 18446744073709551615"
	tests := []struct {
		name    string
		in      string
		want    procStat
		wantErr bool
	}{
		{name: "plain", in: "4242 (java) " + fields, want: procStat{UtimeTicks: 731, StimeTicks: 112, StartTimeTicks: 98765}},
		{name: "odd command", in: "4242 (a) (b c) " + fields, want: procStat{UtimeTicks: 731, StimeTicks: 112, StartTimeTicks: 98765}},
		{name: "no command", in: "4242 java " + fields, wantErr: true},
		{name: "short", in: "4242 (java) S 1 2", wantErr: true},
		{name: "not a number", in: "4242 (java) " + strings.Replace(fields, "731", "x", 1), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStat(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseVmRSS(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "Name:\tgregor\nVmPeak:\t 1000 kB\nVmRSS:\t   12345 kB\nThreads:\t5\n", want: 12345 << 10},
		{in: "Name:\tgregor\n", wantErr: true},
		{in: "VmRSS:\t12 MB\n", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseVmRSS(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseVmRSS(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseUptime(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "350735.47 234388.90\n", want: 350735*time.Second + 470*time.Millisecond},
		{in: "", wantErr: true},
		{in: "abc 1", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseUptime(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseUptime(%q): err = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if d := got - tt.want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("parseUptime(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
