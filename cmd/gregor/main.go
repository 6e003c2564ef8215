// Command gregor runs a Kafka-compatible broker.
//
//	gregor                       # the same as `gregor serve`
//	gregor serve --listen 127.0.0.1:9092 --data-dir ./data
//	gregor serve --config server.properties --override num.partitions=3
//
// Settings come from, lowest precedence first: built-in defaults, the
// --config file (Kafka's server.properties format), KAFKA_* environment
// variables (as the apache/kafka image maps them), --override key=value, and
// the explicit flags (--listen and the others). See docs/configuration.md.
//
// The broker logs "gregor: ready" once it accepts connections, and stops
// cleanly on SIGINT or SIGTERM.
//
// The client commands (topic, produce, consume, group, cluster) talk to any
// Kafka-compatible cluster; see docs/cli.md.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/coordinator/controller"
)

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "gregor:", err)
		os.Exit(1)
	}
}

func newApp() *cli.App {
	serve := &cli.Command{
		Name:  "serve",
		Usage: "run a single-node broker",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:9092", Usage: "`HOST:PORT` to listen on"},
			&cli.StringFlag{Name: "advertise", Usage: "`HOST:PORT` clients are told to connect to (default: the listen address)"},
			&cli.StringFlag{Name: "data-dir", Value: "./data", Usage: "`DIR` for partition logs and topic metadata"},
			&cli.IntFlag{Name: "node-id", Value: 1, Usage: "this broker's node.id"},
			&cli.StringFlag{Name: "controller-quorum", Usage: "`ID@HOST:PORT,...` controller.quorum.voters: run as one node of a cluster (combined broker and controller); empty runs a single node"},
			&cli.StringFlag{Name: "controller-listen", Usage: "`HOST:PORT` the controller listener binds (default: this node's address in --controller-quorum; required with --process-roles broker)"},
			&cli.StringFlag{Name: "process-roles", Usage: "`ROLES` process.roles with --controller-quorum: broker,controller (a voter, the default) or broker (a broker-only node that joins the cluster)"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "text (logfmt-style key=value) or json, one object per line"},
			&cli.StringFlag{Name: "http-listen", Value: "127.0.0.1:9644", Usage: "`HOST:PORT` serving /metrics, /healthz and /readyz; empty disables it"},
			&cli.StringFlag{Name: "config", Usage: "`FILE` in Kafka's server.properties format"},
			&cli.StringSliceFlag{Name: "override", Usage: "`KEY=VALUE` Kafka broker config, over the file and KAFKA_* variables (repeatable)"},
			&cli.StringSliceFlag{Name: "add-scram", Usage: "`MECHANISM=[name=USER,password=PASSWORD]` create a SCRAM credential at start if USER has none for MECHANISM, Kafka's kafka-storage format --add-scram syntax (repeatable; in cluster mode it seeds a new cluster only)"},
		},
		Action: runServe,
	}
	return &cli.App{
		Name:           "gregor",
		Usage:          "a message broker that speaks the Apache Kafka protocol",
		Commands:       []*cli.Command{serve, topicCommand(), produceCommand(), consumeCommand(), groupCommand(), clusterCommand()},
		DefaultCommand: "serve",
		Flags:          serve.Flags,
		// --override listeners=PLAINTEXT://a:1,CONTROLLER://b:2 is one value.
		DisableSliceFlagSeparator: true,
	}
}

func runServe(c *cli.Context) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(flagContext(c, "log-level").String("log-level"))); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger, err := newLogger(flagContext(c, "log-format").String("log-format"), level)
	if err != nil {
		return err
	}
	cfg, origins, err := serveConfig(c, os.Environ(), logger)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	b, err := broker.Start(ctx, cfg)
	if err != nil && ctx.Err() != nil {
		// Stopped by a signal before it served: a cluster node still
		// waiting for its quorum to unfence it. A requested stop, not a
		// failure.
		logger.Info("gregor: stopped before serving", "reason", err)
		return nil
	}
	if err != nil {
		// The broker names topic configs; say which broker key set it.
		for topic, origin := range origins {
			if strings.Contains(err.Error(), "configuration "+topic+":") {
				return fmt.Errorf("invalid configuration: %s: %w", origin, err)
			}
		}
		return err
	}
	<-ctx.Done()
	logger.Info("gregor: shutting down")
	return b.Close()
}

// flagContext returns the context on which the flag name was set: `gregor
// --flag` (serve as the default command) sets it on the app's context,
// `gregor serve --flag` on the command's. Unset, it is c.
func flagContext(c *cli.Context, name string) *cli.Context {
	for _, x := range c.Lineage() {
		if x.IsSet(name) {
			return x
		}
	}
	return c
}

// newLogger returns the logger of --log-format and --log-level, writing to
// stderr.
func newLogger(format string, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
}

// serveConfig builds the broker's configuration from, lowest precedence
// first: the flags' defaults, the --config file, KAFKA_* variables of
// environ, --override arguments, and the flags given explicitly.
// The map names, for each topic default set, the key, value and origin
// that set it.
func serveConfig(c *cli.Context, environ []string, logger *slog.Logger) (broker.Config, map[string]string, error) {
	flags := func(name string) *cli.Context { return flagContext(c, name) }
	cfg := broker.Config{
		Listen:     flags("listen").String("listen"),
		DataDir:    flags("data-dir").String("data-dir"),
		NodeID:     int32(flags("node-id").Int("node-id")),
		HTTPListen: flags("http-listen").String("http-listen"),
		Logger:     logger,
	}
	cfg.HTTPListenIsDefault = !flags("http-listen").IsSet("http-listen")
	var file []property
	if path := flags("config").String("config"); path != "" {
		var err error
		if file, err = readPropertiesFile(path); err != nil {
			return broker.Config{}, nil, fmt.Errorf("--config: %w", err)
		}
	}
	overrides, err := overrideProperties(flags("override").StringSlice("override"))
	if err != nil {
		return broker.Config{}, nil, err
	}
	origins, err := applyPropertiesWithOrigins(&cfg, layerProperties(file, envProperties(environ), overrides), logger)
	if err != nil {
		return broker.Config{}, nil, fmt.Errorf("invalid configuration:\n%w", err)
	}
	// --listen and --advertise are the first listener's, which the
	// shorthand fields hold; with several listeners, Listeners[0] too.
	if fc := flags("listen"); fc.IsSet("listen") {
		cfg.Listen = fc.String("listen")
		if len(cfg.Listeners) > 0 {
			cfg.Listeners[0].Listen = cfg.Listen
		}
	}
	if fc := flags("advertise"); fc.IsSet("advertise") {
		cfg.Advertise = fc.String("advertise")
		if len(cfg.Listeners) > 0 {
			cfg.Listeners[0].Advertise = cfg.Advertise
		}
	}
	if fc := flags("data-dir"); fc.IsSet("data-dir") {
		cfg.DataDir = fc.String("data-dir")
	}
	if fc := flags("node-id"); fc.IsSet("node-id") {
		nodeID := fc.Int("node-id")
		if nodeID < 0 || nodeID > 1<<31-1 {
			return broker.Config{}, nil, fmt.Errorf("--node-id %d is out of range", nodeID)
		}
		cfg.NodeID = int32(nodeID)
	}
	if fc := flags("add-scram"); fc.IsSet("add-scram") {
		cfg.AddScram = fc.StringSlice("add-scram")
	}
	if fc := flags("controller-quorum"); fc.IsSet("controller-quorum") {
		cfg.ControllerQuorumVoters = fc.String("controller-quorum")
	}
	if fc := flags("controller-listen"); fc.IsSet("controller-listen") {
		cfg.ControllerListen = fc.String("controller-listen")
	}
	if fc := flags("process-roles"); fc.IsSet("process-roles") {
		cfg.ProcessRoles = fc.String("process-roles")
	}
	if cfg.ControllerQuorumVoters != "" {
		if _, err := controller.ParseVoters(cfg.ControllerQuorumVoters); err != nil {
			return broker.Config{}, nil, fmt.Errorf("--controller-quorum: %w", err)
		}
	}
	return cfg, origins, nil
}
