package schemaregistry

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wideRecord is a record of n int fields f0…f(n-1).
func wideRecord(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"record","name":"Wide","fields":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"f%d","type":"int"}`, i)
	}
	b.WriteString("]}")
	return b.String()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// parseUnbounded parses past the registry's size limits, to measure the
// checks on schemas larger than it would accept.
func parseUnbounded(t testing.TB, text string) *ParsedSchema {
	t.Helper()
	saved := maxSchemaElements
	maxSchemaElements = 1 << 30
	defer func() { maxSchemaElements = saved }()
	return mustParse(t, text)
}

// TestCompatibilityScalesLinearly: checking 100k fields against 100k+1
// (one added without a default, so incompatible, so Diff runs too) took
// 37 s of CPU with nested loops; by name it takes well under a second.
func TestCompatibilityScalesLinearly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two 100k-field schemas")
	}
	old, newer := parseUnbounded(t, wideRecord(100_000)), parseUnbounded(t, wideRecord(100_001))
	start := cpuTime()
	found := CheckLevel(Full, newer.Root, old.Root)
	changes := Diff(old.Root, newer.Root)
	took := cpuTime() - start
	t.Logf("FULL check + diff of 100k vs 100k+1 fields: %v CPU", took)
	if len(found) != 1 || len(changes) != 1 {
		t.Fatalf("found %v, changes %v; want the one added field", found, changes)
	}
	if took > 5*time.Second {
		t.Fatalf("took %v of CPU; the check is not linear", took)
	}
}

// TestCompatibilityDAGIsNotExponential: a type used twice in each of 40
// nested records is 2^40 paths but 40 distinct pairs; each pair is
// checked once, as Avro's own checker memoizes them.
func TestCompatibilityDAGIsNotExponential(t *testing.T) {
	build := func(extra string) string {
		s := `{"type":"record","name":"L0","fields":[{"name":"x","type":"int"}` + extra + `]}`
		for i := 1; i <= 40; i++ {
			s = fmt.Sprintf(`{"type":"record","name":"L%d","fields":[{"name":"a","type":%s},{"name":"b","type":"L%d"}]}`, i, s, i-1)
		}
		return s
	}
	old, newer := mustParse(t, build("")), mustParse(t, build(`,{"name":"y","type":"int"}`))
	start := cpuTime()
	found := CheckLevel(Full, newer.Root, old.Root)
	Diff(old.Root, newer.Root)
	if took := cpuTime() - start; took > 2*time.Second {
		t.Fatalf("took %v of CPU", took)
	}
	if len(found) == 0 {
		t.Fatal("the added field without a default must be found")
	}
}

// TestCompatibilityWideUnionsScaleLinearly: branches are found by kind and
// name, not by scanning the other union (10k vs 10k branches took 1.6 s
// of CPU pair by pair).
func TestCompatibilityWideUnionsScaleLinearly(t *testing.T) {
	union := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"type":"record","name":"R%d","aliases":["A%d"],"fields":[]}`, i, i)
		}
		return "[" + strings.Join(parts, ",") + `,"int"]`
	}
	old, newer := parseUnbounded(t, union(9_999)), parseUnbounded(t, union(10_000))
	start := cpuTime()
	found := CheckLevel(Full, newer.Root, old.Root)
	changes := Diff(old.Root, newer.Root)
	took := cpuTime() - start
	t.Logf("FULL check + diff of unions of 10k vs 10k+1 branches: %v CPU", took)
	if len(found) != 1 || len(changes) != 1 || changes[0].Kind != "UNION_BRANCH_ADDED" {
		t.Fatalf("found %v, changes %v; want the one added branch", found, changes)
	}
	if took > time.Second {
		t.Fatalf("took %v of CPU", took)
	}
}
