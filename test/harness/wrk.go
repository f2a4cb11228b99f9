package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// WrkResult is what the wrk scripts of test/bench report on their RESULT
// line.
type WrkResult struct {
	RequestsPerSec float64
	P50ms, P99ms   float64
}

// WrkSchemaLookups runs one bounded wrk (one thread, 32 connections) of
// GET /schemas/ids/{id} against url, cycling over ids
// (test/bench/schemaids.lua); a wrk failure, a connection error or a
// non-200 answer fails t. The registry benchmarks of `make bench-registry`
// (test/regbench, test/cluster) measure lookups with it.
func WrkSchemaLookups(t testing.TB, url, duration string, ids []int) WrkResult {
	t.Helper()
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.Itoa(id)
	}
	script := filepath.Join(repoRoot(), "test", "bench", "schemaids.lua")
	cmd := exec.Command("wrk", "-t1", "-c32", "-d"+duration, "--timeout", "5s", "-s", script, url)
	cmd.Env = append(os.Environ(), "ID_LIST="+strings.Join(list, ","))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("wrk: %v\n%s", err, out)
	}
	kv := wrkResultLine(string(out))
	if kv["requests"] == 0 || kv["errors"] != 0 {
		t.Fatalf("wrk against %s: %v errors of %v requests\n%s", url, kv["errors"], kv["requests"], out)
	}
	return WrkResult{RequestsPerSec: kv["requests"] / (kv["duration_us"] / 1e6), P50ms: kv["p50_us"] / 1000, P99ms: kv["p99_us"] / 1000}
}

// wrkResultLine reads the fields of the "RESULT k=v …" line a script's
// done() writes.
func wrkResultLine(out string) map[string]float64 {
	kv := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "RESULT ") {
			continue
		}
		for _, field := range strings.Fields(line)[1:] {
			k, v, _ := strings.Cut(field, "=")
			kv[k], _ = strconv.ParseFloat(v, 64)
		}
	}
	return kv
}
