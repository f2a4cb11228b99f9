package cluster_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// librdkafka's own regression tests (the tests/ directory of its source)
// against three ferry brokers: its transaction and idempotence tests that
// need a real cluster rather than its mock one. The source is Debian's
// source package of the installed librdkafka (scripts/install-test-deps.sh
// fetches it with apt-get source); its test runner is built here against
// the distribution's librdkafka (librdkafka-dev), as tests/README.md
// describes: ./configure, then test.c and the chosen tests, and run with
// a test.conf naming the brokers.

// librdkafkaSrcRoot is where install-test-deps.sh unpacks the source
// (librdkafka-<version>/); FERRY_LIBRDKAFKA_SRC names another tree.
const librdkafkaSrcRoot = "/usr/local/src/ferry-test-deps"

// librdkafkaTestFiles are the test sources built; every other test the
// runner's table names gets a body that fails if run.
var librdkafkaTestFiles = []string{
	"0076-produce_retry.c",           // idempotent retries (sockem)
	"0086-purge.c",                   // purge with in-flight idempotent produce
	"0090-idempotence.c",             // idempotent producer, implicit acks
	"0094-idempotence_msg_timeout.c", // idempotence through message timeouts (sockem)
	"0098-consumer-txn.cpp",          // read_committed over commit/abort mixes
	"0103-transactions.c",            // the transactional producer API
	"0129-fetch_aborted_msgs.c",      // fetching past aborted transactions
}

// Which of them a run runs: the quick set in -Q mode (librdkafka's CI
// subset: 0098 runs only its last two cases) by default, all in full
// with FERRY_LONG=1.
var (
	librdkafkaQuickTests = []string{"0090", "0098", "0103", "0129"}
	librdkafkaLongTests  = []string{"0076", "0086", "0090", "0094", "0098", "0103", "0129"}
)

// TestLibrdkafkaOwnTransactionTests builds librdkafka's test runner and
// runs its transaction and idempotence tests against a three-broker
// cluster; every test run must report PASSED and none FAILED.
func TestLibrdkafkaOwnTransactionTests(t *testing.T) {
	src, version := librdkafkaSource(t)
	runner := buildLibrdkafkaRunner(t, src, version)

	// Quick: four tests at a time. Long: one at a time (tests/Makefile's
	// run_seq): with the sockem tests (0076, 0094) alongside others, the
	// runner's descriptors went astray (a fresh connection reading a
	// 1.2 GB response size, glibc aborting on a closed netlink socket, an
	// error callback in another test, a handle left at exit).
	tests, args := librdkafkaQuickTests, []string{"-p4", "-Q"}
	if os.Getenv("FERRY_LONG") != "" {
		tests, args = librdkafkaLongTests, []string{"-p1"}
	}
	nodes := startCluster(t, 3, "--transaction-state-log-num-partitions", "3", "--offsets-topic-num-partitions", "3")
	work := t.TempDir()
	conf := "bootstrap.servers=" + strings.Join(seeds(nodes), ",") + "\n" +
		// Unique topic names: -count reruns reuse nothing.
		"test.topic.random=true\n"
	if err := os.WriteFile(filepath.Join(work, "test.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	javaProducerByFranzGo(t, work)
	out, err := runLibrdkafkaTests(t, runner, work, tests, args)
	results, failed := librdkafkaResults(out)
	if err != nil && initTimeoutRaced(out) {
		// 0103 asserts that init_transactions with a 1 ms timeout times
		// out, which a broker answering FindCoordinator and
		// InitProducerId within that millisecond fails: the test's
		// timing against a fast broker, not a fault. The run, aborted
		// there, goes again once, and everything must pass then.
		t.Logf("librdkafka's 0103 saw init_transactions(p, 1) finish within 1 ms; running the tests again:\n%s", librdkafkaFailures(out))
		out, err = runLibrdkafkaTests(t, runner, work, tests, args)
		results, failed = librdkafkaResults(out)
	}
	if err != nil || len(failed) > 0 {
		t.Fatalf("librdkafka's tests failed (%v; failed %v):\n%s\n\nthe failures:\n%s", err, failed, tail(out, 300), librdkafkaFailures(out))
	}
	for _, n := range tests {
		if !slices.ContainsFunc(results, func(r string) bool { return strings.HasPrefix(r, n+"_") }) {
			t.Fatalf("test %s did not report PASSED (passed: %v):\n%s", n, results, tail(out, 100))
		}
	}
	// 0098's first half ran its producer through java/run-class.sh.
	if runs := bytes.Count(out, []byte("TransactionProducerCli (franz-go): command: 'topic,")); slices.Contains(tests, "0098") && runs == 0 {
		t.Fatalf("test 0098 never ran TransactionProducerCli:\n%s", tail(out, 100))
	} else {
		t.Logf("passed: %v (0098 ran TransactionProducerCli %d times)", results, runs)
	}
}

// runLibrdkafkaTests runs the runner on tests in work (its test.conf
// names the brokers) and returns its output.
func runLibrdkafkaTests(t *testing.T, runner, work string, tests, args []string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// SIGPIPE ignored: sockem, the tests' socket emulator (0076, 0094),
	// forwards with plain send() and would kill the whole runner when it
	// writes to a connection a finished test closed; librdkafka itself
	// sends with MSG_NOSIGNAL.
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `trap "" PIPE; exec "$0" "$@"`, runner}, args...)...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "TESTS="+strings.Join(tests, ","),
		"RDKAFKA_TEST_CONF="+filepath.Join(work, "test.conf"),
		// The API versions ferry serves are Kafka 3.9's; the tests gate
		// their expectations (KIP-360 among them) on this.
		"TEST_KAFKA_VERSION=3.9.0",
		// test_run_java needs it set; java/run-class.sh ignores it.
		"KAFKA_PATH="+work)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("librdkafka test runner, TESTS=%s %v: %s", strings.Join(tests, ","), args, time.Since(start).Round(time.Second))
	return out, err
}

// initTimeoutRaced reports whether the run's only failure is 0103's
// assertion that init_transactions(p, 1) times out: every failure report
// is 0103's misuse test, in its sub-test "timeout on first", or the
// runner's exit check that finds the handle the failed assertion left.
func initTimeoutRaced(out []byte) bool {
	lines := strings.Split(string(out), "\n")
	subtest, failures := "", 0
	for _, l := range lines {
		if strings.Contains(l, "[0103_transactions ") && strings.Contains(l, "[ Test ") {
			subtest = l
		}
		if strings.Contains(l, "### Test") && strings.Contains(l, "failed at") {
			if strings.Contains(l, `"<MAIN>" failed at test.c`) && strings.Contains(l, "test_wait_exit") {
				continue
			}
			failures++
			if !strings.Contains(l, "0103_transactions (do_test_misuse_txn") || !strings.Contains(subtest, "timeout on first") {
				return false
			}
		}
	}
	return failures > 0 && bytes.Contains(out, []byte("Expected init_transactions() to fail"))
}

// librdkafkaResults reads the runner's summary table: the tests that
// PASSED and those that FAILED.
func librdkafkaResults(out []byte) (passed, failed []string) {
	row := regexp.MustCompile(`\|\S*\s+(\d{4}_\w+)\s+\|\S*\s+(PASSED|FAILED|SKIPPED)\s+\|`)
	for _, m := range row.FindAllSubmatch(out, -1) {
		switch string(m[2]) {
		case "PASSED":
			passed = append(passed, string(m[1]))
		case "FAILED":
			failed = append(failed, string(m[1]))
		}
	}
	return passed, failed
}

// librdkafkaFailures is every failure report in the runner's output (its
// "### Test ... failed at" line and the two after), which the output's
// tail may no longer hold.
func librdkafkaFailures(out []byte) string {
	lines := strings.Split(string(out), "\n")
	var b strings.Builder
	for i, l := range lines {
		if strings.Contains(l, "### Test") && strings.Contains(l, "failed at") {
			b.WriteString(strings.Join(lines[i:min(i+3, len(lines))], "\n") + "\n")
		}
	}
	return b.String()
}

// librdkafkaSource is the source tree of the installed librdkafka and its
// version; without librdkafka-dev, the source or a C/C++ toolchain the
// test fails under CI and is skipped elsewhere.
func librdkafkaSource(t *testing.T) (dir, version string) {
	t.Helper()
	out, err := exec.Command("pkg-config", "--modversion", "rdkafka", "rdkafka++").Output()
	if err != nil {
		err = fmt.Errorf("pkg-config --modversion rdkafka rdkafka++: %v", err)
	}
	harness.RequireService(t, "librdkafka-dev", err)
	version = strings.Fields(string(out))[0]
	for _, tool := range []string{"cc", "c++"} {
		_, err := exec.LookPath(tool)
		harness.RequireService(t, "a C/C++ toolchain (build-essential)", err)
	}
	_, err = os.Stat("/usr/include/rapidjson/document.h")
	harness.RequireService(t, "rapidjson-dev (test 0098 needs it)", err)

	dir = os.Getenv("FERRY_LIBRDKAFKA_SRC")
	if dir == "" {
		dir = filepath.Join(librdkafkaSrcRoot, "librdkafka-"+version)
	}
	_, err = os.Stat(filepath.Join(dir, "tests", "0103-transactions.c"))
	harness.RequireService(t, "librdkafka "+version+"'s source (apt-get source librdkafka; scripts/install-test-deps.sh)", err)
	// The tests are built against the installed library: its headers
	// must be the source's, or the source is of another version.
	for _, h := range [][2]string{{"src/rdkafka.h", "rdkafka.h"}, {"src-cpp/rdkafkacpp.h", "rdkafkacpp.h"}} {
		a, errA := os.ReadFile(filepath.Join(dir, h[0]))
		b, errB := os.ReadFile(filepath.Join("/usr/include/librdkafka", h[1]))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("%s in %s is not the installed /usr/include/librdkafka/%s (%v %v): the source is not librdkafka-dev's version %s",
				h[0], dir, h[1], errA, errB, version)
		}
	}
	return dir, version
}

// librdkafkaRunnerBuild serializes builds within this test binary.
var librdkafkaRunnerBuild sync.Mutex

// buildLibrdkafkaRunner builds tests/test-runner from a copy of src, once
// per source version and recipe: the result is kept in the user's cache
// directory.
func buildLibrdkafkaRunner(t *testing.T, src, version string) string {
	t.Helper()
	librdkafkaRunnerBuild.Lock()
	defer librdkafkaRunnerBuild.Unlock()
	recipe := sha256.Sum256([]byte(strings.Join(librdkafkaTestFiles, ",") + "|" + librdkafkaPatchRecipe + "|" + librdkafkaCFlags))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = t.TempDir()
	}
	dir := filepath.Join(cache, "ferry", "librdkafka-tests-"+version+"-"+hex.EncodeToString(recipe[:6]))
	runner := filepath.Join(dir, "tests", "test-runner")
	if _, err := os.Stat(runner); err == nil {
		return runner
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	run := func(dir string, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s (in %s): %v\n%s", name, strings.Join(args, " "), dir, err, tail(out, 60))
		}
	}
	run(tmp, "cp", "-a", src+"/.", ".")
	run(tmp, "./configure", "--prefix=/usr")
	tests := filepath.Join(tmp, "tests")
	patchLibrdkafkaTests(t, tests)
	writeNotBuilt(t, tests)
	compileLibrdkafkaTests(t, tests)
	if err := os.Rename(tmp, dir); err != nil && !isExist(dir) {
		t.Fatal(err)
	}
	t.Logf("built librdkafka %s's test runner in %s", version, time.Since(start).Round(time.Second))
	return runner
}

func isExist(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// librdkafkaCFlags: the installed library's headers come first, then the
// source's internal ones (rd.h, tinycthread.h) the test framework uses.
const librdkafkaCFlags = "-O1 -g -I/usr/include/librdkafka -I../src -I../src-cpp"

// compileLibrdkafkaTests compiles test.c, the framework's helpers and the
// chosen tests, two at a time, and links them with the system's
// librdkafka and librdkafka++ (tests/Makefile's recipe, built against
// the distribution's library rather than ../src).
func compileLibrdkafkaTests(t *testing.T, dir string) {
	t.Helper()
	units := append([]string{"test.c", "testcpp.cpp", "rusage.c", "sockem.c", "sockem_ctrl.c", "ferry_not_built.c",
		"../src/tinycthread.c", "../src/tinycthread_extra.c", "../src/rdlist.c"}, librdkafkaTestFiles...)
	errs := make([]error, len(units))
	objs := make([]string, len(units))
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, u := range units {
		compiler := "cc"
		if strings.HasSuffix(u, ".cpp") {
			compiler = "c++"
		}
		objs[i] = strings.TrimSuffix(filepath.Base(u), filepath.Ext(u)) + ".o"
		args := append(strings.Fields(librdkafkaCFlags), "-c", u, "-o", objs[i])
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			cmd := exec.Command(compiler, args...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("%s %s: %v\n%s", compiler, strings.Join(args, " "), err, tail(out, 40))
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	link := append([]string{"-rdynamic", "-o", "test-runner"}, objs...)
	link = append(link, "-lrdkafka++", "-lrdkafka", "-lm", "-lpthread", "-ldl")
	cmd := exec.Command("c++", link...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("link test-runner: %v\n%s", err, tail(out, 40))
	}
}

// writeNotBuilt gives every test in test.c's table that is not built a
// body that fails if it is ever run: TESTS selects the built ones.
func writeNotBuilt(t *testing.T, dir string) {
	t.Helper()
	table, err := os.ReadFile(filepath.Join(dir, "test.c"))
	if err != nil {
		t.Fatal(err)
	}
	built := map[string]bool{}
	for _, f := range librdkafkaTestFiles {
		built[f[:4]] = true
	}
	var b strings.Builder
	b.WriteString("/* Generated by ferry's test/cluster: tests not built into this runner. */\n#include \"test.h\"\n")
	decls := regexp.MustCompile(`(?m)^_TEST_DECL\((\w+)\);`).FindAllSubmatch(table, -1)
	if len(decls) < 100 {
		t.Fatalf("test.c declares %d tests: its table's format changed", len(decls))
	}
	for _, m := range decls {
		name := string(m[1])
		if built[name[:4]] {
			continue
		}
		fmt.Fprintf(&b, "int main_%s(int argc, char **argv) {\n\tTEST_FAIL(\"%s is not built into ferry's test runner\");\n\treturn 1;\n}\n", name, name)
	}
	if err := os.WriteFile(filepath.Join(dir, "ferry_not_built.c"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// librdkafkaPatchRecipe names the changes patchLibrdkafkaTests makes (it
// is part of the build cache's key).
const librdkafkaPatchRecipe = "0098: no topic deletion"

// patchLibrdkafkaTests drops 0098-consumer-txn.cpp's topic cleanup
// between cases, checked to apply exactly where expected: librdkafka
// 2.0.2's consumer hangs in its destructor when the topic of an assigned
// partition disappears from the metadata just before (librdkafka issue
// #4362, fixed upstream by PR #4724); the topics have random names in a
// throwaway cluster.
func patchLibrdkafkaTests(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, "0098-consumer-txn.cpp")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, p := range []struct {
		old, new string
		count    int
	}{
		{"Test::delete_topic(c, topic_name.c_str());", "/* ferry: kept (librdkafka 2.0.2 destroy hang) */", 16},
	} {
		if n := strings.Count(s, p.old); n != p.count {
			t.Fatalf("0098-consumer-txn.cpp has %d of %q, want %d: the source changed, revisit the patch", n, p.old, p.count)
		}
		s = strings.ReplaceAll(s, p.old, p.new)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// javaProducerByFranzGo sets up work so that test 0098's Java half runs:
// the runner builds the Java classes with `make -s java` and runs
// java/run-class.sh TransactionProducerCli ARGS (tests/test.c,
// test_run_java). Debian packages no Kafka Java client; this test binary
// plays TransactionProducerCli with franz-go (txn_producer_cli_test.go).
func javaProducerByFranzGo(t *testing.T, work string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\n" +
		"[ \"$1\" = TransactionProducerCli ] || { echo \"run-class.sh: no class $1 here\" >&2; exit 2; }\n" +
		"shift\n" +
		"export " + txnProducerCliEnv + "=1\n" +
		"exec '" + self + "' \"$@\"\n"
	if err := os.Mkdir(filepath.Join(work, "java"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "java", "run-class.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "Makefile"), []byte("java:\n\t@true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The rerun is for 0103's 1 ms init_transactions assertion alone (a CI
// run's output): any other failure, or that assertion in another sub-test,
// fails the suite at once.
func TestInitTimeoutRacedOnlyFor0103sTimingAssertion(t *testing.T) {
	raced, err := os.ReadFile("testdata/librdkafka-0103-init-raced.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !initTimeoutRaced(raced) {
		t.Error("the CI run's output: not recognised as 0103's init_transactions(p, 1) race")
	}
	otherSubtest := bytes.Replace(raced, []byte("timeout on first ]"), []byte("finish on first, again ]"), 1)
	if initTimeoutRaced(otherSubtest) {
		t.Error("the assertion in another sub-test taken for the race")
	}
	otherTest := append(slices.Clone(raced), []byte("\n### Test \"0129_fetch_aborted_msgs\" failed at 0129-fetch_aborted_msgs.c:50:do_test() at now: ###\n")...)
	if initTimeoutRaced(otherTest) {
		t.Error("a second test's failure taken for the race")
	}
	if initTimeoutRaced([]byte("[0103_transactions / 0.1s] [ Test multiple init_transactions(): timeout on first ]\n")) {
		t.Error("a run without failures taken for the race")
	}
}
