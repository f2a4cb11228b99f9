package zookeeper

import (
	"bytes"
	"testing"
	"time"
)

// The first broker's secret wins; every later one reads it back.
func TestGetOrCreateSecretKeepsTheFirst(t *testing.T) {
	srv := zks.Require(t)
	connect := srv.Addr() + testChroot(t)
	a, b := open(t, connect, 6*time.Second), open(t, connect, 6*time.Second)
	first, err := a.GetOrCreateSecret("http-session-key", []byte("first-key"))
	if err != nil || string(first) != "first-key" {
		t.Fatalf("first: %q %v", first, err)
	}
	second, err := b.GetOrCreateSecret("http-session-key", []byte("second-key"))
	if err != nil || !bytes.Equal(second, first) {
		t.Fatalf("second broker got %q %v, want the first's", second, err)
	}
	if _, err := a.GetOrCreateSecret("../escape", []byte("x")); err == nil {
		t.Fatal("a name with a path accepted")
	}
	if _, err := a.GetOrCreateSecret("empty", nil); err == nil {
		t.Fatal("an empty secret accepted")
	}
}
