package cluster_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLongFranzGoTxnEtl (FERRY_LONG=1, make test-long) runs franz-go's own
// TestTxnEtl (pkg/kgo/txn_test.go, of the franz-go version in go.mod)
// against a three-broker ferry cluster: a transactional producer commits
// every 10k records while three GroupTransactSession consumers chain the
// records through two more topics, and the test checks every record
// arrives exactly once, in order per key. KGO_TEST_RECORDS (default
// 100000 here; franz-go's own default is 500000) sizes the run.
func TestLongFranzGoTxnEtl(t *testing.T) {
	if os.Getenv("FERRY_LONG") == "" {
		t.Skip("long: set FERRY_LONG=1 (make test-long)")
	}
	dir := franzGoModuleDir(t)
	bin := filepath.Join(t.TempDir(), "kgo.test")
	build := exec.Command("go", "test", "-c", "-o", bin, ".")
	build.Dir = filepath.Join(dir, "pkg", "kgo")
	// The module cache is read-only; -mod=mod lets go resolve franz-go's
	// own requirements without writing its go.mod.
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building franz-go's kgo tests: %v\n%s", err, out)
	}

	nodes := startCluster(t, 3)
	records := os.Getenv("KGO_TEST_RECORDS")
	if records == "" {
		records = "100000"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, bin, "-test.run", "^TestTxnEtl$", "-test.v", "-test.count", "1", "-test.timeout", "19m")
	run.Dir = build.Dir
	run.Env = append(os.Environ(), "KGO_SEEDS="+strings.Join(seeds(nodes), ","),
		"KGO_TEST_RECORDS="+records, "KGO_LOG_LEVEL=none")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("franz-go's TestTxnEtl against ferry: %v\n%s", err, tail(out, 200))
	}
	if !strings.Contains(string(out), "--- PASS: TestTxnEtl") {
		t.Fatalf("franz-go's TestTxnEtl did not report a pass:\n%s", tail(out, 200))
	}
	t.Logf("%s", tail(out, 5))
}

// franzGoModuleDir is the module cache directory of the franz-go version
// this module requires (downloaded if missing).
func franzGoModuleDir(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/twmb/franz-go")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download github.com/twmb/franz-go: %v", err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download github.com/twmb/franz-go: %v %s", err, mod.Error)
	}
	return mod.Dir
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(string(out), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
