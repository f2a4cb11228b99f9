package idempotency

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
)

func openStore(t *testing.T, dir string, mutate func(*Config)) (*Store, *server.Broker) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := server.Open(server.Config{DataDir: dir}, logger)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Logger: logger}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(b, cfg)
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); b.Close() })
	return s, b
}

// A duplicate of a request in flight waits for it: it gets the answer when
// the original finishes in time, Wait (the gateway's 409) when not.
func TestStoreDuplicateInFlight(t *testing.T) {
	s, _ := openStore(t, t.TempDir(), func(c *Config) { c.WaitInFlight = 200 * time.Millisecond })
	ctx := context.Background()
	orig, err := s.Begin(ctx, "k", fp("a"))
	if err != nil || orig.Decision != Proceed {
		t.Fatalf("original: %+v %v", orig, err)
	}
	start := time.Now()
	dup, err := s.Begin(ctx, "k", fp("a"))
	if err != nil || dup.Decision != Wait {
		t.Fatalf("duplicate: %+v %v", dup, err)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Fatalf("the duplicate gave up after %v", waited)
	}
	got := make(chan Outcome, 1)
	go func() {
		o, _ := s.Begin(ctx, "k", fp("a"))
		got <- o
	}()
	ans := Answer{Status: 200, ContentType: "application/json", Body: []byte(`{"offsets":[{"partition":0,"offset":0}]}`)}
	if err := orig.Ticket.Complete(ctx, ans); err != nil {
		t.Fatal(err)
	}
	o := <-got
	if o.Decision != Replay || string(o.Answer.Body) != string(ans.Body) {
		t.Fatalf("waiting duplicate: %+v", o)
	}
}

// A request started but never finished (its broker stopped between the
// pending record and the answer) is in doubt after a restart: retries are
// refused, never run again.
func TestStorePendingIsInDoubtAfterRestart(t *testing.T) {
	dir := t.TempDir()
	s, b := openStore(t, dir, nil)
	ctx := context.Background()
	if o, err := s.Begin(ctx, "crashed", fp("a")); err != nil || o.Decision != Proceed {
		t.Fatalf("begin: %+v %v", o, err)
	}
	released, _ := s.Begin(ctx, "released", fp("a"))
	released.Ticket.Release(ctx)
	s.Close()
	b.Close()

	s2, _ := openStore(t, dir, nil)
	if o, err := s2.Begin(ctx, "crashed", fp("a")); err != nil || o.Decision != InDoubt {
		t.Fatalf("after restart: %+v %v, want InDoubt", o, err)
	}
	if o, err := s2.Begin(ctx, "crashed", fp("b")); err != nil || o.Decision != Conflict {
		t.Fatalf("another request: %+v %v, want Conflict", o, err)
	}
	if o, err := s2.Begin(ctx, "released", fp("b")); err != nil || o.Decision != Proceed {
		t.Fatalf("a released key: %+v %v, want Proceed", o, err)
	}
}
