package broker

import (
	"log/slog"

	"github.com/gregor-broker/gregor/protocol"
)

// Config configures a broker. The zero value is usable: it listens on a
// random loopback port and keeps its data in memory.
type Config struct {
	// Listen is the address to listen on. Default "127.0.0.1:0" (random port).
	Listen string
	// Advertise is the host:port clients are told to connect to. Default: the
	// address the listener got.
	Advertise string
	// DataDir holds the partition logs and the topic metadata. Empty means an
	// in-memory store that vanishes on Close.
	DataDir string
	// NodeID is this broker's node.id (0 is a valid id, as in Kafka).
	NodeID int32
	// MaxFrameBytes is socket.request.max.bytes: larger requests close the
	// connection before anything is allocated for them. Default 100 MiB.
	MaxFrameBytes int32
	// AutoCreateTopics is auto.create.topics.enable. Nil means true.
	AutoCreateTopics *bool
	// NumPartitions is num.partitions, used for auto-created topics and for
	// CreateTopics requests that ask for the default. Default 1.
	NumPartitions int32
	// DefaultReplicationFactor is default.replication.factor. Default 1.
	DefaultReplicationFactor int16
	// TopicDefaults overrides the broker-wide defaults of topic configs, by
	// topic config name (for example "max.message.bytes": "2097152").
	TopicDefaults map[string]string
	// Logger receives the broker's logs. Default slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:0"
	}
	if c.MaxFrameBytes <= 0 {
		c.MaxFrameBytes = protocol.DefaultMaxFrameBytes
	}
	if c.AutoCreateTopics == nil {
		yes := true
		c.AutoCreateTopics = &yes
	}
	if c.NumPartitions <= 0 {
		c.NumPartitions = 1
	}
	if c.DefaultReplicationFactor <= 0 {
		c.DefaultReplicationFactor = 1
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}
