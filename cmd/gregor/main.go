// Command gregor runs a Kafka-compatible broker.
//
//	gregor                       # the same as `gregor serve`
//	gregor serve --listen 127.0.0.1:9092 --data-dir ./data
//
// The broker logs "gregor: ready" once it accepts connections, and stops
// cleanly on SIGINT or SIGTERM.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/gregor-broker/gregor/broker"
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
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error"},
		},
		Action: runServe,
	}
	return &cli.App{
		Name:           "gregor",
		Usage:          "a message broker that speaks the Apache Kafka protocol",
		Commands:       []*cli.Command{serve},
		DefaultCommand: "serve",
		Flags:          serve.Flags,
	}
}

func runServe(c *cli.Context) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	nodeID := c.Int("node-id")
	if nodeID < 0 || nodeID > 1<<31-1 {
		return fmt.Errorf("--node-id %d is out of range", nodeID)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	b, err := broker.Start(ctx, broker.Config{
		Listen:    c.String("listen"),
		Advertise: c.String("advertise"),
		DataDir:   c.String("data-dir"),
		NodeID:    int32(nodeID),
		Logger:    logger,
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	logger.Info("gregor: shutting down")
	return b.Close()
}
