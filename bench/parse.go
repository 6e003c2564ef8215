package main

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// producerPerf is the summary ProducerPerformance (kafka-producer-perf-test)
// prints when it is done. MB is MiB, as the tool computes it.
type producerPerf struct {
	Records    int64
	RecordsSec float64
	MBSec      float64
	AvgMs      float64
	MaxMs      float64
	P50Ms      float64
	P99Ms      float64
	P999Ms     float64
}

// The final line of ProducerPerformance, for example
// "500000 records sent, 123456.7 records/sec (11.77 MB/sec), 3.21 ms avg
// latency, 250.00 ms max latency, 2 ms 50th, 9 ms 95th, 20 ms 99th, 40 ms 99.9th."
// The per-window progress lines have no percentiles and do not match.
var producerPerfSummary = regexp.MustCompile(`^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, \d+ ms 95th, (\d+) ms 99th, (\d+) ms 99.9th\.?$`)

// parseProducerPerf finds the summary line in the tool's standard output.
func parseProducerPerf(out string) (producerPerf, error) {
	var found *producerPerf
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := producerPerfSummary.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		var p producerPerf
		var err error
		fields := []struct {
			dst any
			s   string
		}{{&p.Records, m[1]}, {&p.RecordsSec, m[2]}, {&p.MBSec, m[3]}, {&p.AvgMs, m[4]}, {&p.MaxMs, m[5]},
			{&p.P50Ms, m[6]}, {&p.P99Ms, m[7]}, {&p.P999Ms, m[8]}}
		for _, f := range fields {
			switch d := f.dst.(type) {
			case *int64:
				*d, err = strconv.ParseInt(f.s, 10, 64)
			case *float64:
				*d, err = strconv.ParseFloat(f.s, 64)
			}
			if err != nil {
				return producerPerf{}, fmt.Errorf("producer perf summary %q: %w", sc.Text(), err)
			}
		}
		found = &p
	}
	if found == nil {
		return producerPerf{}, fmt.Errorf("no summary line in the producer perf output")
	}
	return *found, nil
}

// consumerPerf is the summary ConsumerPerformance (kafka-consumer-perf-test)
// prints without --show-detailed-stats. The fetch figures leave out the time
// spent joining the group; MB is MiB.
type consumerPerf struct {
	MB          float64
	MBSec       float64
	Records     int64
	RecordsSec  float64
	RebalanceMs int64
	FetchMs     int64
	FetchMBSec  float64
	FetchRecSec float64
}

// parseConsumerPerf reads the line under the tool's header
// "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg,
// nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec".
func parseConsumerPerf(out string) (consumerPerf, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	header := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "start.time,") {
			header = true
			continue
		}
		if !header || line == "" {
			continue
		}
		if strings.HasPrefix(line, "WARNING: Exiting before consuming the expected number of messages") {
			return consumerPerf{}, fmt.Errorf("consumer perf: %s", line)
		}
		f := strings.Split(line, ",")
		if len(f) != 10 {
			continue
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		var c consumerPerf
		var errs [8]error
		c.MB, errs[0] = strconv.ParseFloat(f[2], 64)
		c.MBSec, errs[1] = strconv.ParseFloat(f[3], 64)
		c.Records, errs[2] = strconv.ParseInt(f[4], 10, 64)
		c.RecordsSec, errs[3] = strconv.ParseFloat(f[5], 64)
		c.RebalanceMs, errs[4] = strconv.ParseInt(f[6], 10, 64)
		c.FetchMs, errs[5] = strconv.ParseInt(f[7], 10, 64)
		c.FetchMBSec, errs[6] = strconv.ParseFloat(f[8], 64)
		c.FetchRecSec, errs[7] = strconv.ParseFloat(f[9], 64)
		for _, err := range errs {
			if err != nil {
				return consumerPerf{}, fmt.Errorf("consumer perf summary %q: %w", line, err)
			}
		}
		return c, nil
	}
	return consumerPerf{}, fmt.Errorf("no summary line in the consumer perf output")
}

// procStat is what the bench reads of a process from /proc/PID/stat.
type procStat struct {
	UtimeTicks     int64 // user CPU time, in clock ticks
	StimeTicks     int64 // system CPU time, in clock ticks
	StartTimeTicks int64 // start time after boot, in clock ticks
}

// parseProcStat parses the contents of /proc/PID/stat. The command name (field
// 2) is in parentheses and may itself hold spaces and parentheses, so fields
// are counted from the last ')'.
func parseProcStat(s string) (procStat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("proc stat: no command name")
	}
	rest := strings.Fields(s[i+1:])
	// rest[0] is field 3 (state); utime is field 14, stime 15, starttime 22.
	if len(rest) < 20 {
		return procStat{}, fmt.Errorf("proc stat: %d fields after the command name", len(rest))
	}
	var p procStat
	var err error
	for _, f := range []struct {
		dst *int64
		idx int
	}{{&p.UtimeTicks, 11}, {&p.StimeTicks, 12}, {&p.StartTimeTicks, 19}} {
		if *f.dst, err = strconv.ParseInt(rest[f.idx], 10, 64); err != nil {
			return procStat{}, fmt.Errorf("proc stat field %d: %w", f.idx+3, err)
		}
	}
	return p, nil
}

// parseVmRSS returns VmRSS from the contents of /proc/PID/status, in bytes.
func parseVmRSS(status string) (int64, error) {
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("proc status: VmRSS %q", rest)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proc status: VmRSS: %w", err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("proc status: no VmRSS")
}

// parseUptime returns the first figure of /proc/uptime, the time since boot,
// which the kernel gives to the hundredth of a second.
func parseUptime(uptime string) (time.Duration, error) {
	f := strings.Fields(uptime)
	if len(f) == 0 {
		return 0, fmt.Errorf("proc uptime: empty")
	}
	secs, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("proc uptime: %w", err)
	}
	return time.Duration(secs * float64(time.Second)), nil
}
