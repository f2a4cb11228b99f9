package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// runHealth asks a node's HTTP port whether it serves, for container health
// checks: the images ferry ships in have no shell, curl or wget, so the
// binary itself is the probe. It exits 0 only on a 200 answer; a refused
// connection, a timeout or any other status exits 1 with the reason.
func runHealth(args []string) error {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	url := fs.String("url", envOr("FERRY_HEALTH_URL", "http://127.0.0.1:8080/healthz"),
		"the route to ask: /healthz (the process serves) or /readyz (logs loaded, schema store reachable); env FERRY_HEALTH_URL")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: health takes no arguments, got %q", errUsage, fs.Args())
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("%w: --url %q: %v", errUsage, *url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", *url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s %s", *url, resp.Status, body)
	}
	return nil
}
