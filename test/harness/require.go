package harness

import (
	"os"
	"testing"
)

// RequireService is the one rule for tests that need a real service
// (PostgreSQL, kcat, Chromium, …): when err says it cannot be had, the test
// fails under CI (the env var CI is set, and `make test` installs every
// service), and is skipped elsewhere with the reason.
func RequireService(t testing.TB, service string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is required under CI (scripts/install-test-deps.sh installs it) and is not usable: %v", service, err)
	}
	t.Skipf("%s is not usable (set CI to make this a failure): %v", service, err)
}
