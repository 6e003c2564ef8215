package main

// The client commands (topic, produce, consume, group, cluster) talk to any
// Kafka-compatible broker over the wire through franz-go. This file holds
// what they share: the connection flags, the client set-up, how Kafka errors
// are printed, and the parsing of values that several commands take; how
// they authenticate is client_security.go.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// bootstrapEnv names the variable that sets --bootstrap-server.
const bootstrapEnv = "GREGOR_BOOTSTRAP_SERVER"

// connectionFlags are the flags of every client command. timeout is the
// command's own --timeout, whose meaning differs between commands.
func connectionFlags(timeout *cli.DurationFlag) []cli.Flag {
	timeout.Name = "timeout"
	return append([]cli.Flag{
		&cli.StringFlag{
			Name: "bootstrap-server", Aliases: []string{"b"}, Value: "127.0.0.1:9092", EnvVars: []string{bootstrapEnv},
			Usage: "`HOST:PORT` of a broker to connect to; several are separated by commas",
		},
		&cli.StringFlag{Name: "client-id", Value: "gregor-cli", Usage: "`ID` sent to the brokers as client.id"},
		timeout,
	}, securityFlags()...)
}

// requestTimeout is the --timeout of the commands whose work is a few
// requests: the longest a command waits for the cluster.
func requestTimeout() *cli.DurationFlag {
	return &cli.DurationFlag{Value: 30 * time.Second, Usage: "give up when the cluster has not answered within `DURATION`"}
}

// newClient returns a client for the brokers named by --bootstrap-server.
// It does not connect until it is first used.
func newClient(c *cli.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	var seeds []string
	for _, s := range strings.Split(c.String("bootstrap-server"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return nil, errors.New("--bootstrap-server: no broker address given")
	}
	security, err := clientSecurity(c)
	if err != nil {
		return nil, err
	}
	base := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID(c.String("client-id")),
		kgo.DialTimeout(10 * time.Second),
	}, security...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("--bootstrap-server: %w", err)
	}
	return cl, nil
}

// adminSession is an admin client and the deadline its command must meet.
type adminSession struct {
	*kadm.Client
	ctx    context.Context
	cancel context.CancelFunc
	// brokers and timeout make a missed deadline say what was waited for.
	brokers string
	timeout time.Duration
}

// newAdmin starts an admin session under the command's --timeout. The
// caller must call close.
func newAdmin(c *cli.Context) (*adminSession, error) {
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		return nil, fmt.Errorf("--timeout %v: must be positive", timeout)
	}
	cl, err := newClient(c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(c.Context, timeout)
	adm := kadm.NewClient(cl)
	// Requests that carry a timeout (CreateTopics, DeleteTopics,
	// CreatePartitions) let the cluster wait as long as we do.
	adm.SetTimeoutMillis(int32(min(timeout.Milliseconds(), 1<<31-1)))
	return &adminSession{Client: adm, ctx: ctx, cancel: cancel, brokers: c.String("bootstrap-server"), timeout: timeout}, nil
}

func (s *adminSession) close() {
	s.cancel()
	s.Close()
}

// check turns an error from a request into what the user reads: a missed
// deadline names the brokers that did not answer.
func (s *adminSession) check(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(s.ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer from %s within %v (--timeout): %w", s.brokers, s.timeout, err)
	}
	return reachError(s.brokers, err)
}

// reachError says which brokers could not be reached when err is a
// failure to connect.
func reachError(brokers string, err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return fmt.Errorf("cannot reach %s (--bootstrap-server): %w", brokers, err)
	}
	return err
}

// kafkaError is a failure the cluster reported for one resource: Kafka's
// error name and description, and the broker's own message when it sent
// one.
func kafkaError(what string, err error, message string) error {
	if message != "" {
		var ke *kerr.Error
		if !errors.As(err, &ke) || message != ke.Description {
			return fmt.Errorf("%s: %w (%s)", what, err, message)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// failures collects the resources a command could not act on. When the
// command names several, each failure is printed to the error stream as it
// happens and the command ends with a count; when it names one, the
// failure is the command's error. Either way the exit status is non-zero.
type failures struct {
	w     io.Writer
	total int // resources the command acts on
	count int
	only  error
}

func (f *failures) add(err error) {
	f.count++
	if f.total == 1 {
		f.only = err
		return
	}
	fmt.Fprintf(f.w, "Error: %v\n", err)
}

// err returns the command's result: nil, the one failure, or how many of
// the resources failed.
func (f *failures) err(noun string) error {
	switch {
	case f.count == 0:
		return nil
	case f.only != nil:
		return f.only
	}
	return fmt.Errorf("%d of %d %s failed", f.count, f.total, noun)
}

// table writes aligned columns to the command's output.
func table(c *cli.Context) *tabwriter.Writer {
	return tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
}

// parseKeyValues parses repeatable KEY=VALUE arguments of flag, refusing
// any without '=' or with an empty key, and keys given twice.
func parseKeyValues(flag string, args []string) ([][2]string, error) {
	var kvs [][2]string
	seen := make(map[string]bool)
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("--%s %q: want KEY=VALUE", flag, a)
		}
		if k = strings.TrimSpace(k); k == "" {
			return nil, fmt.Errorf("--%s %q: the key is empty", flag, a)
		}
		if seen[k] {
			return nil, fmt.Errorf("--%s: %s is given twice", flag, k)
		}
		seen[k] = true
		kvs = append(kvs, [2]string{k, v})
	}
	return kvs, nil
}

// parseTime parses a point in time given as milliseconds since the epoch,
// as RFC 3339 (2026-11-29T18:00:00Z, 2026-11-29T18:00:00.5+01:00), or as
// Kafka's tools take it without a zone (2026-11-29T18:00:00.000, local
// time). It returns milliseconds since the epoch.
func parseTime(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("%q: a timestamp cannot be negative", s)
		}
		return ms, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04:05.999999999", s, time.Local); err == nil {
		return t.UnixMilli(), nil
	}
	return 0, fmt.Errorf("%q: want milliseconds since the epoch or a time like 2026-11-29T18:00:00Z", s)
}

// isTerminal reports whether the reader or writer is a terminal.
func isTerminal(rw any) bool {
	f, ok := rw.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// rate formats n things done in d as a rate per second.
func rate(n int64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	r := float64(n) / d.Seconds()
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.2fM", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

// byteSize formats a number of bytes.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// withArgs adapts an action that takes positional arguments, and lets
// flags follow them (`gregor topic create orders --partitions 3`), which
// the flag parser of urfave/cli v2 would otherwise take as arguments. The
// flags after the first argument are set on the command's context as if
// they had come first; "--" ends the flags.
func withArgs(action func(c *cli.Context, args []string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		byName := make(map[string]cli.Flag)
		for _, f := range c.Command.Flags {
			for _, n := range f.Names() {
				byName[n] = f
			}
		}
		var args []string
		rest := c.Args().Slice()
		if len(rest) > 0 && len(rest[0]) > 1 && rest[0][0] == '-' {
			// Only a "--" the flag parser consumed leaves a leading
			// argument that looks like a flag: everything is arguments.
			return action(c, rest)
		}
		for i := 0; i < len(rest); i++ {
			a := rest[i]
			if a == "--" {
				args = append(args, rest[i+1:]...)
				break
			}
			if len(a) < 2 || a[0] != '-' {
				args = append(args, a)
				continue
			}
			name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if name == "h" || name == "help" {
				return cli.ShowSubcommandHelp(c)
			}
			f, ok := byName[name]
			if !ok {
				return fmt.Errorf("flag provided but not defined: %s", a)
			}
			if _, isBool := f.(*cli.BoolFlag); isBool && !hasValue {
				value = "true"
			} else if !hasValue {
				if i+1 == len(rest) {
					return fmt.Errorf("flag needs an argument: %s", a)
				}
				i++
				value = rest[i]
			}
			if err := c.Set(f.Names()[0], value); err != nil {
				return fmt.Errorf("invalid value %q for flag %s: %w", value, a, err)
			}
		}
		return action(c, args)
	}
}
