package kafka

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/ferry-mq/ferry/server/metrics"
)

// Kafka's defaults for the listener settings.
const (
	// DefaultMaxRequestBytes is socket.request.max.bytes.
	DefaultMaxRequestBytes = 100 << 20
	// DefaultIdleTimeout is connections.max.idle.ms.
	DefaultIdleTimeout = 10 * time.Minute
)

// Config is the Kafka listener's configuration. The zero value plus
// Defaults listens on :9092 with Kafka's limits.
type Config struct {
	// Addr is the listen address (listeners). Default ":9092".
	Addr string
	// AdvertisedAddr is the host:port Metadata and DescribeCluster tell
	// clients to use (advertised.listeners). Default: the broker core's
	// AdvertisedKafkaAddr, else Addr.
	AdvertisedAddr string
	// MaxRequestBytes caps one request frame (socket.request.max.bytes),
	// checked before the frame is read into memory. Default 100 MiB.
	// Requests other than Produce are further capped at 8 MiB.
	MaxRequestBytes int32
	// IdleTimeout closes a connection that sent nothing for this long
	// (connections.max.idle.ms). Default 10 minutes.
	IdleTimeout time.Duration
	// Logger receives connection and request errors. Default slog.Default.
	Logger *slog.Logger
	// Metrics counts requests per API, their latency and errors, open
	// connections and connection idle time; nil: no metrics.
	Metrics *metrics.Metrics
}

// Defaults fills zero fields.
func (c *Config) Defaults() {
	if c.Addr == "" {
		c.Addr = ":9092"
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	switch {
	case c.MaxRequestBytes < minFrameBytes:
		return fmt.Errorf("socket.request.max.bytes %d: must be at least %d", c.MaxRequestBytes, minFrameBytes)
	case c.IdleTimeout < 0:
		return fmt.Errorf("connections.max.idle.ms %v: must not be negative", c.IdleTimeout)
	}
	return nil
}
