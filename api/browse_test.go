package api

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/server"
	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/server/records"
)

// browseBase is the first record's timestamp; record i has browseBase+i.
const browseBase = int64(1_700_000_000_000)

// seedBrowse creates topic with partitions and writes n records spread
// round robin: record i has key k<i>, value {"n":i,"user":{"id":i%5},
// "tag":"t<i%3>"}, header parity=even|odd, timestamp browseBase+i.
func seedBrowse(t *testing.T, e *testEnv, topic string, partitions, n int) {
	t.Helper()
	if err := e.broker.CreateTopic(server.TopicSpec{Name: topic, Partitions: int32(partitions), ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	req := server.ProduceRequest{Topic: topic}
	for i := range n {
		parity := "odd"
		if i%2 == 0 {
			parity = "even"
		}
		req.Records = append(req.Records, server.ProduceRecord{Partition: int32(i % partitions), Record: records.Record{
			Key:       []byte(fmt.Sprintf("k%d", i)),
			Value:     []byte(fmt.Sprintf(`{"n":%d,"user":{"id":%d},"tag":"t%d"}`, i, i%5, i%3)),
			Headers:   []records.Header{{Key: "parity", Value: []byte(parity)}},
			Timestamp: browseBase + int64(i),
		}})
	}
	if _, err := e.broker.Produce(context.Background(), &req); err != nil {
		t.Fatal(err)
	}
}

func (e *testEnv) search(t *testing.T, topic string, q url.Values) searchAnswer {
	t.Helper()
	a := e.do(t, http.MethodGet, "/kafka/"+topic+"/search?"+q.Encode(), "", "")
	if a.status != http.StatusOK {
		t.Fatalf("search %s: %d %s", q.Encode(), a.status, a.body)
	}
	var ans searchAnswer
	a.decode(t, &ans)
	return ans
}

// valueN is the "n" of a seeded record.
func valueN(t *testing.T, rec avroReadRecord) int {
	t.Helper()
	var v struct{ N int }
	if err := json.Unmarshal(rec.Value, &v); err != nil {
		t.Fatalf("value %s: %v", rec.Value, err)
	}
	return v.N
}

func ns(t *testing.T, recs []avroReadRecord) []int {
	out := make([]int, len(recs))
	for i, r := range recs {
		out[i] = valueN(t, r)
	}
	return out
}

func TestSearchFilters(t *testing.T) {
	e := newTestEnv(t)
	seedBrowse(t, e, "orders", 3, 60)
	cases := []struct {
		name  string
		query url.Values
		want  func(i int) bool
	}{
		{"everything", url.Values{}, func(int) bool { return true }},
		{"key", url.Values{"key": {"k17"}}, func(i int) bool { return i == 17 }},
		{"value substring", url.Values{"value": {`"tag":"t2"`}}, func(i int) bool { return i%3 == 2 }},
		{"header present", url.Values{"header": {"parity"}}, func(int) bool { return true }},
		{"header absent", url.Values{"header": {"nope"}}, func(int) bool { return false }},
		{"header value", url.Values{"header": {"parity=even"}}, func(i int) bool { return i%2 == 0 }},
		{"json $ ==", url.Values{"json": {"$.user.id == 3"}}, func(i int) bool { return i%5 == 3 }},
		{"json bare", url.Values{"json": {"user.id=3"}}, func(i int) bool { return i%5 == 3 }},
		{"json !=", url.Values{"json": {`$.tag != "t0"`}}, func(i int) bool { return i%3 != 0 }},
		{"json string word", url.Values{"json": {"tag=t1"}}, func(i int) bool { return i%3 == 1 }},
		{"json exists", url.Values{"json": {"$.user"}}, func(int) bool { return true }},
		{"json missing", url.Values{"json": {"$.user.name"}}, func(int) bool { return false }},
		{"time range", url.Values{"from": {strconv.FormatInt(browseBase+10, 10)}, "to": {strconv.FormatInt(browseBase+19, 10)}},
			func(i int) bool { return i >= 10 && i <= 19 }},
		{"combined", url.Values{"header": {"parity=odd"}, "json": {"$.user.id==1"}, "from": {strconv.FormatInt(browseBase+20, 10)}},
			func(i int) bool { return i%2 == 1 && i%5 == 1 && i >= 20 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.query.Set("order", "oldest")
			ans := e.search(t, "orders", c.query)
			got := map[int]bool{}
			for _, n := range ns(t, ans.Records) {
				if got[n] {
					t.Fatalf("record %d twice", n)
				}
				got[n] = true
			}
			for i := range 60 {
				if got[i] != c.want(i) {
					t.Fatalf("record %d: matched %v, want %v (got %v)", i, got[i], c.want(i), ns(t, ans.Records))
				}
			}
			if !ans.Progress.Done || ans.Cursor != "" || ans.Progress.ScannedRecords == 0 {
				t.Fatalf("progress %+v cursor %q", ans.Progress, ans.Cursor)
			}
		})
	}
}

func TestSearchTimeRangeStartsAtTimeIndex(t *testing.T) {
	e := newTestEnv(t)
	seedBrowse(t, e, "ts", 2, 400)
	ans := e.search(t, "ts", url.Values{"from": {strconv.FormatInt(browseBase+390, 10)}, "order": {"oldest"}})
	if len(ans.Records) != 10 {
		t.Fatalf("got %v", ns(t, ans.Records))
	}
	// ListOffsets by timestamp moved the start: only the tail was scanned.
	if ans.Progress.ScannedRecords > 20 {
		t.Fatalf("scanned %d records for a range of 10", ans.Progress.ScannedRecords)
	}
}

func TestSearchChosenPartitions(t *testing.T) {
	e := newTestEnv(t)
	seedBrowse(t, e, "parts", 3, 30)
	ans := e.search(t, "parts", url.Values{"partitions": {"2,0,2"}, "order": {"oldest"}})
	for _, r := range ans.Records {
		if r.Partition == 1 {
			t.Fatalf("partition 1 searched: %+v", r)
		}
	}
	if len(ans.Records) != 20 || len(ans.Progress.Partitions) != 2 {
		t.Fatalf("%d records, progress %+v", len(ans.Records), ans.Progress.Partitions)
	}
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "many", Partitions: maxSearchPartitions + 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	e.do(t, http.MethodGet, "/kafka/many/search", "", "").wantError(t, http.StatusBadRequest, codeBadParam)
	if many := e.search(t, "many", url.Values{"partitions": {"0,500"}}); !many.Progress.Done || len(many.Progress.Partitions) != 2 {
		t.Fatalf("%+v", many.Progress)
	}
}

func TestSearchNewestFirst(t *testing.T) {
	e := newTestEnv(t)
	seedBrowse(t, e, "news", 3, 30)
	ans := e.search(t, "news", url.Values{"limit": {"5"}})
	if got := ns(t, ans.Records); fmt.Sprint(got) != "[29 28 27 26 25]" {
		t.Fatalf("newest first: %v", got)
	}
	old := e.search(t, "news", url.Values{"limit": {"4"}, "order": {"oldest"}})
	if got := ns(t, old.Records); fmt.Sprint(got) != "[0 1 2 3]" {
		t.Fatalf("oldest first: %v", got)
	}
}

// A search resumed cursor by cursor, under a small budget, sees every
// match exactly once, in both orders.
func TestSearchCursorResumesWithoutGapsOrDuplicates(t *testing.T) {
	e := newTestEnv(t)
	seedBrowse(t, e, "resume", 4, 500)
	seedBrowse(t, e, "wide", 50, 500) // windows of a few records each
	for _, tc := range []struct{ topic, order string }{{"resume", "newest"}, {"resume", "oldest"}, {"wide", "newest"}, {"wide", "oldest"}} {
		order := tc.order
		t.Run(tc.topic+"-"+order, func(t *testing.T) {
			q := url.Values{"order": {order}, "max_scan_records": {"37"}, "limit": {"11"}, "header": {"parity=even"}}
			seen := map[int]int{}
			var sequence []int
			pages := 0
			for {
				ans := e.search(t, tc.topic, q)
				pages++
				if ans.Progress.ScannedRecords > 37 {
					t.Fatalf("scanned %d over a budget of 37", ans.Progress.ScannedRecords)
				}
				if len(ans.Records) > 11 {
					t.Fatalf("%d records over the limit of 11", len(ans.Records))
				}
				for _, n := range ns(t, ans.Records) {
					seen[n]++
					sequence = append(sequence, n)
				}
				if ans.Progress.Done {
					if ans.Cursor != "" {
						t.Fatal("done with a cursor")
					}
					break
				}
				if ans.Cursor == "" || ans.Progress.StoppedBy == "" {
					t.Fatalf("not done, no cursor: %+v", ans.Progress)
				}
				if pages > 200 {
					t.Fatal("no end")
				}
				q.Set("cursor", ans.Cursor)
			}
			for i := range 500 {
				want := 0
				if i%2 == 0 {
					want = 1
				}
				if seen[i] != want {
					t.Fatalf("record %d seen %d times, want %d", i, seen[i], want)
				}
			}
			if pages < 500/37 {
				t.Fatalf("%d pages: the budget did not bound them", pages)
			}
			// Timestamps grow with n: across partitions and pages, the
			// matches come in timestamp order.
			for i := 1; i < len(sequence); i++ {
				if (order == "newest") != (sequence[i] < sequence[i-1]) {
					t.Fatalf("%s first: %d after %d", order, sequence[i], sequence[i-1])
				}
			}
		})
	}
}

func TestSearchBudgetBytes(t *testing.T) {
	e := newTestEnv(t)
	seedBrowse(t, e, "bytes", 1, 100)
	ans := e.search(t, "bytes", url.Values{"max_scan_bytes": {"200"}})
	// Each record is ~45 bytes of key, value and header.
	if ans.Progress.ScannedBytes > 200 || ans.Progress.ScannedRecords < 2 || ans.Progress.StoppedBy != "budget_bytes" {
		t.Fatalf("progress %+v", ans.Progress)
	}
	if len(ans.Progress.Partitions) != 1 || ans.Progress.Partitions[0].Scanned != ans.Progress.ScannedRecords ||
		ans.Progress.Partitions[0].Remaining != 100-ans.Progress.ScannedRecords {
		t.Fatalf("partition progress %+v", ans.Progress.Partitions)
	}
	// One record larger than the whole budget is still scanned: a search progresses.
	tiny := e.search(t, "bytes", url.Values{"max_scan_bytes": {"1"}})
	if tiny.Progress.ScannedRecords != 1 || tiny.Cursor == "" {
		t.Fatalf("progress %+v", tiny.Progress)
	}
}

func TestSearchErrors(t *testing.T) {
	e := newTestEnv(t)
	seedBrowse(t, e, "errs", 2, 10)
	good := e.search(t, "errs", url.Values{"limit": {"1"}})
	other := e.search(t, "errs", url.Values{"limit": {"1"}, "key": {"k1"}, "max_scan_records": {"1"}})
	for name, q := range map[string]string{
		"bad json path":       "json=" + url.QueryEscape("$.a[=="),
		"empty json path":     "json=" + url.QueryEscape("$ == 1"),
		"bad literal":         "json=" + url.QueryEscape("a == {}"),
		"bad from":            "from=yesterday",
		"from after to":       "from=10&to=5",
		"bad order":           "order=sideways",
		"bad budget":          "max_scan_records=0",
		"budget over max":     "max_scan_bytes=999999999999",
		"bad limit":           "limit=5000",
		"cursor not base64":   "cursor=%25%25%25",
		"cursor not json":     "cursor=" + url.QueryEscape("bm90IGpzb24"),
		"cursor other order":  "order=oldest&limit=1&cursor=" + url.QueryEscape(good.Cursor),
		"cursor other filter": "limit=1&cursor=" + url.QueryEscape(other.Cursor),
		"empty header":        "header=",
		"bad partition":       "partitions=0,x",
		"partition too high":  "partitions=2",
		"cursor other parts":  "limit=1&partitions=0&cursor=" + url.QueryEscape(good.Cursor),
	} {
		t.Run(name, func(t *testing.T) {
			e.do(t, http.MethodGet, "/kafka/errs/search?"+q, "", "").wantError(t, http.StatusBadRequest, codeBadParam)
		})
	}
	e.do(t, http.MethodGet, "/kafka/nope/search", "", "").wantError(t, http.StatusNotFound, codeTopicNotFound)
	e.do(t, http.MethodGet, "/kafka/nope/export", "", "").wantError(t, http.StatusNotFound, codeTopicNotFound)
	e.do(t, http.MethodGet, "/kafka/errs/export?format=xml", "", "").wantError(t, http.StatusBadRequest, codeBadParam)
	e.do(t, http.MethodGet, "/kafka/errs/search?decode=avro", "", "").wantError(t, http.StatusServiceUnavailable, codeUnavailable)
}

// An export of a topic far larger than the buffers streams: the server's
// heap does not grow with it, and every record arrives once.
func TestExportStreamsLargeTopic(t *testing.T) {
	e := newTestEnv(t)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "big", Partitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	const batches, perBatch, valueSize = 40, 500, 1000 // 20000 records, ~20 MB
	value := strings.Repeat("x", valueSize)
	for b := range batches {
		req := server.ProduceRequest{Topic: "big"}
		for i := range perBatch {
			n := b*perBatch + i
			req.Records = append(req.Records, server.ProduceRecord{Partition: int32(n % 2), Record: records.Record{
				Key: []byte(strconv.Itoa(n)), Value: []byte(value), Timestamp: browseBase + int64(n)}})
		}
		if _, err := e.broker.Produce(context.Background(), &req); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	base := int64(before.HeapAlloc)

	res, err := http.Get(e.url + "/kafka/big/export?order=oldest")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(res.Header.Get("Content-Disposition"), `attachment; filename="big-`) {
		t.Fatalf("%d %v", res.StatusCode, res.Header)
	}
	seen := make([]bool, batches*perBatch)
	var peak uint64
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	lines := 0
	var summary exportSummary
	for sc.Scan() {
		lines++
		if strings.HasPrefix(sc.Text(), `{"_export"`) {
			if err := json.Unmarshal(sc.Bytes(), &summary); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var rec readRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %d: %v", lines, err)
		}
		n, _ := strconv.Atoi(string(rec.Key)) // a number: JSON as stored
		if seen[n] {
			t.Fatalf("record %d twice", n)
		}
		seen[n] = true
		if lines%2000 == 0 {
			// What is live now: the server's windows and buffers, the
			// client's line buffer; garbage collected first.
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for n, ok := range seen {
		if !ok {
			t.Fatalf("record %d missing", n)
		}
	}
	if !summary.Export.Done || summary.Export.Matched != batches*perBatch || res.Trailer.Get(trailerDone) != "true" ||
		res.Trailer.Get(trailerMatched) != strconv.Itoa(batches*perBatch) {
		t.Fatalf("summary %+v trailers %v", summary.Export, res.Trailer)
	}
	// The export is ~24 MB of JSON; what the server holds at once is a
	// window, a fetch buffer per partition and a flush buffer (the client
	// and server share this heap).
	if grew := int64(peak) - base; grew > 10<<20 {
		t.Fatalf("heap grew by %d MiB during the export", grew>>20)
	}
	t.Logf("exported %d records; live heap grew by at most %d KiB", batches*perBatch, (int64(peak)-base)>>10)
}

func TestExportCSVAndBudgetTrailer(t *testing.T) {
	e := newTestEnv(t)
	seedBrowse(t, e, "csvt", 2, 50)
	e.broker.Produce(context.Background(), &server.ProduceRequest{Topic: "csvt", Records: []server.ProduceRecord{
		{Partition: 0, Record: records.Record{Key: []byte{0xff, 0x00}, Value: []byte("a,b\n\"c\""), Timestamp: browseBase + 1000}}}})
	res, err := http.Get(e.url + "/kafka/csvt/export?format=csv&order=oldest&max_scan_records=40")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") || !strings.Contains(res.Header.Get("Content-Disposition"), ".csv") {
		t.Fatalf("headers %v", res.Header)
	}
	rows, err := csv.NewReader(res.Body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 41 || rows[0][0] != "topic" || rows[0][9] != "headers" {
		t.Fatalf("%d rows, first %v", len(rows), rows[0])
	}
	io.Copy(io.Discard, res.Body)
	cursor := res.Trailer.Get(trailerCursor)
	if res.Trailer.Get(trailerDone) != "false" || res.Trailer.Get(trailerStopped) != "budget_records" || cursor == "" {
		t.Fatalf("trailers %v", res.Trailer)
	}
	// The rest, from the cursor: 11 records, the binary key in base64 and
	// the value with a comma, a newline and quotes intact.
	res2, err := http.Get(e.url + "/kafka/csvt/export?format=csv&order=oldest&max_scan_records=40&cursor=" + url.QueryEscape(cursor))
	if err != nil {
		t.Fatal(err)
	}
	defer res2.Body.Close()
	rows2, err := csv.NewReader(res2.Body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows2) != 12 {
		t.Fatalf("%d rows after the cursor", len(rows2))
	}
	var binary []string
	for _, r := range rows2 {
		if r[6] == "base64" {
			binary = r
		}
	}
	if binary == nil || binary[5] != "/wA=" || binary[7] != "a,b\n\"c\"" || binary[9] != "{}" {
		t.Fatalf("binary row %q", binary)
	}
	if res2.Trailer.Get(trailerDone) != "true" {
		t.Fatalf("trailers %v", res2.Trailer)
	}
}

func TestRepublish(t *testing.T) {
	e := newTestEnv(t)
	seedBrowse(t, e, "src", 2, 10)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "dst", Partitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	// Records 3 (partition 1, offset 1) and 4 (partition 0, offset 2).
	a := e.do(t, http.MethodPost, "/kafka/src/republish", "application/json",
		`{"target":"dst","keep_partition":true,"records":[{"partition":1,"offset":1},{"partition":0,"offset":2}]}`)
	if a.status != http.StatusOK {
		t.Fatalf("%d %s", a.status, a.body)
	}
	var ans republishAnswer
	a.decode(t, &ans)
	if len(ans.Records) != 2 || ans.Records[0].To.Partition != 1 || ans.Records[1].To.Partition != 0 {
		t.Fatalf("%+v", ans)
	}
	for i, want := range []int{3, 4} {
		got := e.readAll(t, "dst", int(ans.Records[i].To.Partition))
		rec := got.Records[0]
		if string(rec.Key) != fmt.Sprintf(`"k%d"`, want) && !strings.Contains(string(rec.Key), fmt.Sprintf("k%d", want)) {
			t.Fatalf("key %s", rec.Key)
		}
		var v struct{ N int }
		json.Unmarshal(rec.Value, &v)
		if v.N != want || rec.Timestamp != browseBase+int64(want) || rec.Headers["parity"] == "" {
			t.Fatalf("republished %+v", rec)
		}
	}

	for name, c := range map[string]struct {
		body         string
		status, code int
	}{
		"not json":        {`{`, http.StatusBadRequest, codeMalformed},
		"no records":      {`{"target":"dst","records":[]}`, http.StatusBadRequest, codeBadParam},
		"listed twice":    {`{"target":"dst","records":[{"partition":0,"offset":0},{"partition":0,"offset":0}]}`, http.StatusBadRequest, codeBadParam},
		"bad target name": {`{"target":"a b","records":[{"partition":0,"offset":0}]}`, http.StatusBadRequest, codeBadParam},
		"unknown target":  {`{"target":"nope","records":[{"partition":0,"offset":0}]}`, http.StatusNotFound, codeTopicNotFound},
		"no such offset":  {`{"target":"dst","records":[{"partition":0,"offset":0},{"partition":0,"offset":99}]}`, http.StatusNotFound, codeRecordNotFound},
		"no partition":    {`{"target":"dst","records":[{"partition":7,"offset":0}]}`, http.StatusNotFound, codePartitionNotFound},
	} {
		t.Run(name, func(t *testing.T) {
			e.do(t, http.MethodPost, "/kafka/src/republish", "application/json", c.body).wantError(t, c.status, c.code)
		})
	}
	// Nothing half-written: dst still holds the two records.
	if n := len(e.readAll(t, "dst", 0).Records) + len(e.readAll(t, "dst", 1).Records); n != 2 {
		t.Fatalf("dst holds %d records", n)
	}
	var many []string
	for i := range maxRepublishRecords + 1 {
		many = append(many, fmt.Sprintf(`{"partition":0,"offset":%d}`, i))
	}
	e.do(t, http.MethodPost, "/kafka/src/republish", "application/json", `{"target":"dst","records":[`+strings.Join(many, ",")+`]}`).
		wantError(t, http.StatusBadRequest, codeBadParam)
}

func TestGroupLagHistory(t *testing.T) {
	e := newResetEnv(t) // group g on topic rs: commits 1 and 2, ends 3 and 2: lag 2
	e.groups.SampleLag(time.UnixMilli(1000))
	seedMore := server.ProduceRequest{Topic: "rs", Records: []server.ProduceRecord{
		{Partition: 0, Record: records.Record{Value: []byte(`{}`)}}, {Partition: 1, Record: records.Record{Value: []byte(`{}`)}}}}
	if _, err := e.broker.Produce(context.Background(), &seedMore); err != nil {
		t.Fatal(err)
	}
	e.groups.SampleLag(time.UnixMilli(2000))
	a := e.do(t, http.MethodGet, "/groups/g/lag/history", "", "")
	if a.status != http.StatusOK {
		t.Fatalf("%d %s", a.status, a.body)
	}
	var ans lagHistoryAnswer
	a.decode(t, &ans)
	// The coordinator's own timer may add samples; the scripted ones come first.
	if len(ans.Samples) < 2 || ans.Samples[0].Time != 1000 || ans.Samples[0].Lag != 2 || ans.Samples[1].Lag != 4 ||
		ans.Samples[1].Topics["rs"] != 4 || ans.Current.Lag != 4 || ans.IntervalMs != 10000 {
		t.Fatalf("%+v", ans)
	}
	e.do(t, http.MethodGet, "/groups/nope/lag/history", "", "").wantError(t, http.StatusNotFound, codeNotFound)
}

// Search and export need READ on the topic; republish also WRITE on the
// target, and a refused one writes nothing.
func TestBrowseAuthorization(t *testing.T) {
	creds := &memCredentials{}
	creds.set(t, "bob", "pw", auth.ScramSHA256)
	allowed := allowList{"User:bob READ TOPIC:open": true, "User:bob WRITE TOPIC:mine": true, "User:bob READ TOPIC:mine": true}
	e := newTestEnv(t, func(_ *server.Config, c *Config) {
		c.Auth = &HTTPAuth{Credentials: creds, SessionKey: testSessionKey}
		c.Authorizer = allowed
	})
	for _, name := range []string{"open", "closed", "mine"} {
		seedBrowse(t, e, name, 1, 3)
	}
	bob := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("bob:pw")), "Content-Type": "application/json"}
	if a := e.request(t, http.MethodGet, "/kafka/open/search", bob, ""); a.status != http.StatusOK {
		t.Fatalf("search open: %d %s", a.status, a.body)
	}
	for _, path := range []string{"/kafka/closed/search", "/kafka/closed/export"} {
		e.request(t, http.MethodGet, path, bob, "").wantError(t, http.StatusForbidden, codeDenied)
	}
	body := `{"target":"%s","records":[{"partition":0,"offset":1}]}`
	e.request(t, http.MethodPost, "/kafka/closed/republish", bob, fmt.Sprintf(body, "mine")).wantError(t, http.StatusForbidden, codeDenied)
	a := e.request(t, http.MethodPost, "/kafka/open/republish", bob, fmt.Sprintf(body, "closed"))
	a.wantError(t, http.StatusForbidden, codeDenied)
	if !strings.Contains(string(a.body), "WRITE") {
		t.Fatalf("refusal %s does not name WRITE", a.body)
	}
	if a := e.request(t, http.MethodPost, "/kafka/open/republish", bob, fmt.Sprintf(body, "mine")); a.status != http.StatusOK {
		t.Fatalf("republish open → mine: %d %s", a.status, a.body)
	}
	for topic, want := range map[string]int64{"closed": 3, "mine": 4} {
		if end, _, err := e.broker.ListOffset(topic, 0, server.OffsetLatest); err != nil || end != want {
			t.Fatalf("%s ends at %d (%v), want %d", topic, end, err, want)
		}
	}
}

// decode=avro renders Confluent wire-format values through the registry,
// as the records route's format=avro does.
func TestSearchDecodesAvro(t *testing.T) {
	e := newTestEnv(t, func(_ *server.Config, c *Config) { c.Schemas = newTestRegistry(t, nil) })
	id := e.register(t, "av-value", `{"type":"record","name":"U","fields":[{"name":"id","type":"long"}]}`)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "av", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	wire := []byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id), 0x2a} // id: 21, zigzag
	if _, err := e.broker.Produce(context.Background(), &server.ProduceRequest{Topic: "av", Records: []server.ProduceRecord{
		{Partition: 0, Record: records.Record{Value: wire, Timestamp: browseBase}}}}); err != nil {
		t.Fatal(err)
	}
	ans := e.search(t, "av", url.Values{"decode": {"avro"}})
	if len(ans.Records) != 1 || ans.Records[0].ValueEncoding != encodingAvro || ans.Records[0].ValueSchemaID != id ||
		string(ans.Records[0].Value) != `{"id":21}` {
		t.Fatalf("%+v", ans.Records)
	}
	plain := e.search(t, "av", url.Values{})
	if plain.Records[0].ValueEncoding == encodingAvro {
		t.Fatal("decoded without decode=avro")
	}
}

// Records larger than a window's byte bound: oldest first the window ends
// early, newest first a smaller window is read from the top; either way
// every record is scanned once, in order.
func TestSearchLargeRecords(t *testing.T) {
	e := newTestEnv(t)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "large", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		v := fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 400<<10))
		if _, err := e.broker.Produce(context.Background(), &server.ProduceRequest{Topic: "large", Records: []server.ProduceRecord{
			{Partition: 0, Record: records.Record{Value: []byte(v), Timestamp: browseBase + int64(i)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	for order, want := range map[string]string{"newest": "[5 4 3 2 1 0]", "oldest": "[0 1 2 3 4 5]"} {
		ans := e.search(t, "large", url.Values{"order": {order}})
		if got := fmt.Sprint(ns(t, ans.Records)); got != want || !ans.Progress.Done {
			t.Fatalf("%s first: %s, done %v", order, got, ans.Progress.Done)
		}
	}
}

// Records deleted (retention, DeleteRecords) after a cursor was made are
// skipped when it resumes, in both orders, and never counted as scanned.
func TestSearchCursorAfterLogStartMoves(t *testing.T) {
	e := newTestEnv(t)
	for _, order := range []string{"oldest", "newest"} {
		topic := "del-" + order
		seedBrowse(t, e, topic, 1, 2000)
		q := url.Values{"order": {order}, "max_scan_records": {"10"}}
		first := e.search(t, topic, q)
		if _, err := e.broker.DeleteRecords(topic, 0, 1500); err != nil {
			t.Fatal(err)
		}
		q.Set("cursor", first.Cursor)
		q.Set("max_scan_records", "1000000")
		q.Set("limit", "1000")
		rest := e.search(t, topic, q)
		got := ns(t, rest.Records)
		want := 500 // 1500..1999
		if order == "newest" {
			want = 490 // 1500..1989: the first page took 1990..1999
		}
		if !rest.Progress.Done || len(got) != want || rest.Progress.ScannedRecords != int64(want) {
			t.Fatalf("%s: %d records after the deletion, progress %+v", order, len(got), rest.Progress)
		}
		for _, n := range got {
			if n < 1500 || order == "newest" && n >= 1990 || order == "oldest" && n < 10 {
				t.Fatalf("%s: record %d", order, n)
			}
		}
	}
}

// An export whose scan outlasts the server's write timeout before its
// first match still completes: each write extends the deadline first.
func TestExportOutlivesWriteTimeout(t *testing.T) {
	e := newTestEnv(t)
	if err := e.broker.CreateTopic(server.TopicSpec{Name: "slow", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	const n = 60000
	for start := 0; start < n; start += 5000 {
		req := server.ProduceRequest{Topic: "slow"}
		for i := start; i < start+5000; i++ {
			req.Records = append(req.Records, server.ProduceRecord{Partition: 0, Record: records.Record{
				Value: []byte(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("z", 100))), Timestamp: browseBase + int64(i)}})
		}
		if _, err := e.broker.Produce(context.Background(), &req); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewUnstartedServer(e.gateway.Handler())
	srv.Config.WriteTimeout = 100 * time.Millisecond
	srv.Start()
	defer srv.Close()
	started := time.Now()
	res, err := http.Get(srv.URL + "/kafka/slow/export?order=oldest&json=" + url.QueryEscape(fmt.Sprintf("$.n == %d", n-1)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("after %v: %v", time.Since(started), err)
	}
	if lines := strings.Split(strings.TrimSpace(string(body)), "\n"); len(lines) != 2 || !strings.Contains(lines[0], fmt.Sprintf(`"n":%d`, n-1)) ||
		res.Trailer.Get(trailerDone) != "true" {
		t.Fatalf("after %v: %q, trailers %v", time.Since(started), body, res.Trailer)
	}
	t.Logf("the export took %v under a write timeout of 100ms", time.Since(started))
}
