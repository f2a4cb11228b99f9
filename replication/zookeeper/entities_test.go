package zookeeper

import (
	"errors"
	"strconv"
	"testing"
	"time"
)

// A user's znode holds both SCRAM verifiers and quotas, written by
// different requests on different brokers: a write made between another
// writer's read and write is not lost, whichever of the two it is.
func TestEntityConfigEditsKeepAConcurrentChange(t *testing.T) {
	connect := zks.Require(t).Addr() + testChroot(t)
	c := open(t, connect, 10*time.Second)
	other := open(t, connect, 10*time.Second) // another broker
	set := func(cl *Client, key, value string) error {
		_, err := cl.EditEntityConfig("users/bob", func(cfg map[string]string) error {
			cfg[key] = value
			return nil
		})
		return err
	}

	// A quota lands on a user that does not exist yet, while a verifier is
	// being written: the create of the verifier's writer fails and retries.
	attempts := 0
	if _, err := c.EditEntityConfig("users/bob", func(cfg map[string]string) error {
		attempts++
		if attempts == 1 {
			if err := set(other, "producer_byte_rate", "2048"); err != nil {
				t.Fatalf("the other broker's quota: %v", err)
			}
		}
		cfg["SCRAM-SHA-512"] = "salt=…"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := c.EntityConfig("users/bob")
	if err != nil || attempts != 2 || got["producer_byte_rate"] != "2048" || got["SCRAM-SHA-512"] == "" {
		t.Fatalf("after %d attempts: %v %v", attempts, got, err)
	}

	// The other way round: a verifier is added while a quota is being set.
	attempts = 0
	if _, err := c.EditEntityConfig("users/bob", func(cfg map[string]string) error {
		attempts++
		if attempts == 1 {
			if err := set(other, "SCRAM-SHA-256", "salt=…"); err != nil {
				t.Fatalf("the other broker's verifier: %v", err)
			}
		}
		cfg["consumer_byte_rate"] = "4096"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, _ = c.EntityConfig("users/bob")
	if attempts != 2 || got["SCRAM-SHA-256"] == "" || got["SCRAM-SHA-512"] == "" || got["consumer_byte_rate"] != "4096" {
		t.Fatalf("after %d attempts: %v", attempts, got)
	}

	// A writer that keeps losing gives up with an error, not a lost write.
	_, err = c.EditEntityConfig("users/bob", func(cfg map[string]string) error {
		if err := set(other, "producer_byte_rate", strconv.Itoa(attempts)); err != nil {
			t.Fatal(err)
		}
		attempts++
		return nil
	})
	if !errors.Is(err, ErrConfigContended) {
		t.Fatalf("a write contended on every attempt: %v", err)
	}
	if err := set(c, "SCRAM-SHA-512", "salt=2"); err != nil {
		t.Fatalf("an uncontended write after it: %v", err)
	}
	for _, bad := range []string{"users/a//b", "users/..", "users/bob/"} {
		if _, err := c.EntityConfig(bad); err == nil {
			t.Errorf("entity path %q accepted", bad)
		}
	}
}
