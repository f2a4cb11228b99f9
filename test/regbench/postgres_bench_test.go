// Package regbench measures the schema registry as a user meets it: a real
// `ferry serve` with --schema-store on a real PostgreSQL that keeps its
// default durability (every commit flushed), driven over HTTP.
package regbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/pgserver"
)

// writers is how many HTTP clients register at once (issue 27's figure).
const writers = 8

// BenchmarkRegistryPostgres measures, for every type GET /schemas/types
// lists (so a type merged later is covered without editing this), with
// `writers` concurrent HTTP writers on one node:
//
//   - new_subjects/s: each registration a new schema under a new subject;
//   - new_versions/s: each writer adds versions to its own subject, under
//     the default compatibility (BACKWARD), each version a new schema;
//   - lookups/s: GET /schemas/ids/{id} with wrk (one thread, 32
//     connections, BENCH_LOOKUP_DURATION, default 5s) over that type's ids;
//   - pg_commits/s: right after, single-row INSERT commits straight into
//     the same PostgreSQL from `writers` connections — the ceiling of one
//     commit per registration at that moment (this machine's other load
//     comes and goes; compare the ratio).
//
// Each iteration is one round of all three per type; run it with
// -benchtime Nx and the medians are reported. BENCH_REGISTRATIONS (default
// 200) is how many registrations each writer makes per measurement;
// BENCH_URL runs it against a node already running instead of its own.
func BenchmarkRegistryPostgres(b *testing.B) {
	_, err := exec.LookPath("wrk")
	harness.RequireService(b, "wrk", err)
	perWriter := envInt("BENCH_REGISTRATIONS", 200)
	lookupDuration := os.Getenv("BENCH_LOOKUP_DURATION")
	if lookupDuration == "" {
		lookupDuration = "5s"
	}
	url := os.Getenv("BENCH_URL") // a node already running (to profile it), else one of our own
	var pool *pgxpool.Pool
	if url == "" {
		pg := pgserver.StartDurable(b)
		url = harness.Start(b, "--schema-store", pg.DSN()).URL
		pool = commitBaseline(b, pg.DSN())
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: writers}}
	var types []string
	if err := getJSON(client, url+"/schemas/types", &types); err != nil {
		b.Fatal(err)
	}
	b.Logf("types served: %v; %d writers x %d registrations per measurement", types, writers, perWriter)
	results := map[string][]float64{}
	round := 0
	run := time.Now().Unix() % 100000 // subjects of another run on the same node stay apart
	for b.Loop() {
		round++
		for _, typ := range types {
			gen, ok := generators[typ]
			if !ok {
				b.Fatalf("no schema generator for type %s: add one to generators", typ)
			}
			prefix := fmt.Sprintf("r%d_%d_%s", run, round, strings.ToLower(typ)) // a valid name in every type
			subjects, ids := registerConcurrently(b, client, url, typ, perWriter, func(w, i int) (string, string) {
				return fmt.Sprintf("%s-new-w%d-%d", prefix, w, i), gen(fmt.Sprintf("%s_w%d_%d", prefix, w, i), 0)
			})
			versions, _ := registerConcurrently(b, client, url, typ, perWriter, func(w, i int) (string, string) {
				return fmt.Sprintf("%s-versions-w%d", prefix, w), gen(fmt.Sprintf("%s_v_w%d", prefix, w), i)
			})
			lookups := harness.WrkSchemaLookups(b, url, lookupDuration, ids).RequestsPerSec
			b.Logf("round %d %-8s new subjects %7.0f/s  new versions %7.0f/s  lookups by id %8.0f/s", round, typ, subjects, versions, lookups)
			if pool != nil {
				commits := commitRate(b, pool, perWriter)
				b.Logf("round %d %-8s PostgreSQL alone: %7.0f single-row commits/s from %d writers", round, typ, commits, writers)
				results["pg_commits/s"] = append(results["pg_commits/s"], commits)
			}
			results[typ+"_new_subjects/s"] = append(results[typ+"_new_subjects/s"], subjects)
			results[typ+"_new_versions/s"] = append(results[typ+"_new_versions/s"], versions)
			results[typ+"_lookups/s"] = append(results[typ+"_lookups/s"], lookups)
		}
	}
	for name, xs := range results {
		slices.Sort(xs)
		b.ReportMetric(xs[len(xs)/2], name)
	}
}

// generators make the n-th schema of a family: distinct for every
// (family, n), and each n compatible (BACKWARD) with n-1, as the versions
// a user adds to one subject are. A version changes only a default (or,
// in Protobuf, a reserved number), so every version costs the same.
var generators = map[string]func(family string, n int) string{
	"AVRO": func(family string, n int) string {
		return fmt.Sprintf(`{"type":"record","name":"%s","namespace":"bench","fields":[`+
			`{"name":"id","type":"long"},{"name":"name","type":"string","default":"v%d"},`+
			`{"name":"tags","type":{"type":"array","items":"string"},"default":[]}]}`, family, n)
	},
	"JSON": func(family string, n int) string {
		return fmt.Sprintf(`{"type":"object","title":"%s","properties":{"id":{"type":"integer"},`+
			`"name":{"type":"string","default":"v%d"},"tags":{"type":"array","items":{"type":"string"}}},"required":["id"]}`, family, n)
	},
	"PROTOBUF": func(family string, n int) string {
		return fmt.Sprintf("syntax = \"proto3\";\npackage bench;\n\nmessage %s {\n  reserved %d;\n  int64 id = 1;\n  string name = 2;\n  repeated string tags = 3;\n}\n", family, n+100)
	},
}

// commitBaseline prepares the yardstick of commitRate: on a machine
// whose other load comes and goes, registrations/s mean something next to
// what PostgreSQL itself commits in the same minute.
func commitBaseline(b *testing.B, dsn string) *pgxpool.Pool {
	b.Helper()
	pool, err := pgxpool.New(context.Background(), dsn+"&pool_max_conns="+strconv.Itoa(writers))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), "CREATE TABLE regbench_commits (id bigserial PRIMARY KEY, v text)"); err != nil {
		b.Fatal(err)
	}
	return pool
}

// commitRate measures single-row INSERTs, each its own durable commit,
// from `writers` concurrent connections: the most any registration (one
// commit each) could reach here and now.
func commitRate(b *testing.B, pool *pgxpool.Pool, perWriter int) float64 {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				if _, err := pool.Exec(context.Background(), "INSERT INTO regbench_commits (v) VALUES ($1)", "x"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	return float64(writers*perWriter) / took.Seconds()
}

// registerConcurrently runs `writers` goroutines, writer w registering
// subjectAndSchema(w, i) for i in [0, perWriter) in order, and returns the
// registrations per second and every id handed out. Any failed
// registration fails the benchmark.
func registerConcurrently(b *testing.B, client *http.Client, url, typ string, perWriter int, subjectAndSchema func(w, i int) (string, string)) (float64, []int) {
	b.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ids  []int
		errs []error
	)
	start := time.Now()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				subject, schema := subjectAndSchema(w, i)
				id, err := register(client, url, subject, typ, schema)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					ids = append(ids, id)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if len(errs) > 0 {
		b.Fatalf("%d registrations failed, first: %v", len(errs), errs[0])
	}
	return float64(len(ids)) / took.Seconds(), ids
}

func register(client *http.Client, url, subject, typ, schema string) (int, error) {
	body, _ := json.Marshal(map[string]string{"schema": schema, "schemaType": typ})
	resp, err := client.Post(url+"/subjects/"+subject+"/versions", "application/vnd.schemaregistry.v1+json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("register %s: %s: %s", subject, resp.Status, out)
	}
	var r struct{ ID int }
	if err := json.Unmarshal(out, &r); err != nil || r.ID <= 0 {
		return 0, fmt.Errorf("register %s: answer %s: %v", subject, out, err)
	}
	return r.ID, nil
}

func getJSON(client *http.Client, url string, v any) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
