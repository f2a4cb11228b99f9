package kcli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrUnreachable is returned by Dial when no bootstrap broker accepts a
// TCP connection.
var ErrUnreachable = errors.New("no bootstrap broker is reachable")

// UnreachableHint ends the unreachable error: what the user may fix.
// Kafka's script names say their own flag.
var UnreachableHint = "is `ferry serve` running? set --bootstrap or FERRY_BOOTSTRAP"

// dialTimeout bounds the reachability check of each bootstrap address.
const dialTimeout = 3 * time.Second

// Seeds splits a comma-separated bootstrap list ("h1:9092,h2:9092").
func Seeds(bootstrap string) []string {
	var seeds []string
	for _, s := range strings.Split(bootstrap, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	return seeds
}

// Dial checks that one of the bootstrap brokers is reachable and returns a
// kgo client seeded with them; opts are added to the client's options.
func Dial(ctx context.Context, bootstrap string, opts ...kgo.Opt) (*kgo.Client, error) {
	seeds := Seeds(bootstrap)
	if len(seeds) == 0 {
		return nil, errors.New("--bootstrap is empty")
	}
	if err := checkReachable(ctx, seeds); err != nil {
		return nil, err
	}
	tlsOpts, err := TLS.opts()
	if err != nil {
		return nil, err
	}
	base := append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("ferry-cli")}, tlsOpts...)
	authOpts, err := DefaultAuth.Opt()
	if err != nil {
		return nil, err
	}
	base = append(base, authOpts...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	return cl, nil
}

// DialAdmin is Dial for administrative commands.
func DialAdmin(ctx context.Context, bootstrap string) (*kadm.Client, error) {
	cl, err := Dial(ctx, bootstrap)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

func checkReachable(ctx context.Context, seeds []string) error {
	var errs []error
	d := net.Dialer{Timeout: dialTimeout}
	for _, s := range seeds {
		conn, err := d.DialContext(ctx, "tcp", s)
		if err == nil {
			conn.Close()
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("%w at %s: %w (%s)", ErrUnreachable, strings.Join(seeds, ","), errors.Join(errs...), UnreachableHint)
}
