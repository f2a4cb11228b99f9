package pgtest

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRequireWithoutPostgres: with no server, Require skips the test, or
// fails it when CI is set. It runs itself in a subprocess to see both.
func TestRequireWithoutPostgres(t *testing.T) {
	if os.Getenv("PGTEST_HELPER") == "1" {
		mainCalled = true
		startOnce.Do(func() { startErr = errors.New("no PostgreSQL in this test") })
		Require(t)
		t.Fatal("Require returned without a server")
	}
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRequireWithoutPostgres$", "-test.v")
		cmd.Env = append(withoutCI(os.Environ()), "PGTEST_HELPER=1")
		if ci != "" {
			cmd.Env = append(cmd.Env, "CI="+ci)
		}
		out, err := cmd.CombinedOutput()
		switch {
		case ci == "" && (err != nil || !strings.Contains(string(out), "--- SKIP")):
			t.Errorf("without CI: %v\n%s", err, out)
		case ci != "" && (err == nil || !strings.Contains(string(out), "required under CI")):
			t.Errorf("with CI=%s: %v\n%s", ci, err, out)
		}
	}
}

func withoutCI(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "CI=") {
			out = append(out, kv)
		}
	}
	return out
}
