package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

func TestParseISODuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"PT15M": 15 * time.Minute, "P1DT2H": 26 * time.Hour, "PT0.5S": 500 * time.Millisecond,
		"pt1h30m": 90 * time.Minute, "-PT10S": -10 * time.Second, "P2D": 48 * time.Hour,
	} {
		if got, err := parseISODuration(in); err != nil || got != want {
			t.Errorf("parseISODuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "P", "PT", "15M", "P1H", "PT1X", "P99999999999999999999D", "PT9223372036854775807H"} {
		if got, err := parseISODuration(bad); err == nil {
			t.Errorf("parseISODuration(%q) = %v, want an error", bad, got)
		}
	}
}

func TestParseKafkaDatetime(t *testing.T) {
	utc := time.Date(2024, 3, 1, 12, 30, 15, 250e6, time.UTC)
	for in, want := range map[string]time.Time{
		"2024-03-01T12:30:15.250Z":      utc,
		"2024-03-01T14:30:15.250+02:00": utc,
		"2024-03-01T14:30:15.250+0200":  utc,
		"2024-03-01T12:30:15Z":          utc.Truncate(time.Second),
		"2024-03-01T12:30:15.250":       time.Date(2024, 3, 1, 12, 30, 15, 250e6, time.Local),
	} {
		if got, err := parseKafkaDatetime(in); err != nil || !got.Equal(want) {
			t.Errorf("parseKafkaDatetime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseKafkaDatetime("yesterday"); err == nil || !strings.Contains(err.Error(), "yyyy-MM-dd'T'HH:mm:ss.SSS") {
		t.Errorf("bad datetime: %v", err)
	}
}

func TestParseAddConfig(t *testing.T) {
	got, err := parseAddConfig("k1=v1,k2=[a,b,c],k3=,k4=x=y")
	want := map[string]string{"k1": "v1", "k2": "a,b,c", "k3": "", "k4": "x=y"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseAddConfig = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"novalue", "=v", "k=[unclosed", "a=1,,b"} {
		if got, err := parseAddConfig(bad); err == nil {
			t.Errorf("parseAddConfig(%q) = %v, want an error", bad, got)
		}
	}
}

func FuzzParseAddConfig(f *testing.F) {
	for _, s := range []string{"k1=v1,k2=[a,b],k3=v3", "k=[", "=", ",", "a=]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := parseAddConfig(s); err == nil && len(m) > len(s) {
			t.Fatalf("%q gave %d keys", s, len(m))
		}
		parseISODuration(s)
		parseReplicaAssignment(s)
	})
}

func TestParseReplicaAssignment(t *testing.T) {
	got, err := parseReplicaAssignment("1:2, 2:3,3:1")
	if err != nil || !reflect.DeepEqual(got, [][]int32{{1, 2}, {2, 3}, {3, 1}}) {
		t.Fatalf("got %v, %v", got, err)
	}
	for in, want := range map[string]string{"1:1": "duplicate entries", "1:2,3": "different replication factor", "a": "not a broker id"} {
		if _, err := parseReplicaAssignment(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseReplicaAssignment(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestOffsetFilters(t *testing.T) {
	fs, err := offsetFilters("", "", "t1:1,t2:1-3,t3,t4:5-,:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		topic string
		p     int32
		want  bool
	}{{"t1", 1, true}, {"t1", 2, false}, {"t2", 2, true}, {"t2", 3, false}, {"t3", 9, true},
		{"t4", 4, false}, {"t4", 50, true}, {"other", 0, true}, {"other", 1, false}} {
		if got := anyPartitionMatch(fs, c.topic, c.p); got != c.want {
			t.Errorf("%s:%d matched %v, want %v", c.topic, c.p, got, c.want)
		}
	}
	fs, err = offsetFilters("or.*", "0,2", "")
	if err != nil || !anyPartitionMatch(fs, "orders", 2) || anyPartitionMatch(fs, "orders", 1) || anyTopicMatch(fs, "xorders") {
		t.Fatalf("--topic or.* --partitions 0,2: %v", err)
	}
	if _, err := offsetFilters("", "", "t:x"); err == nil {
		t.Error("t:x accepted")
	}
}

func TestArgRewrites(t *testing.T) {
	got := expandMultiValue(strings.Fields("--topic t --producer-props a=1 b=2 --throughput -1 --producer-props c=3"), "producer-props")
	want := strings.Fields("--topic t --producer-props a=1 --producer-props b=2 --throughput -1 --producer-props c=3")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("expandMultiValue = %q", got)
	}
	got = withOptionalValue(strings.Fields("--compression-codec --topic t"), "compression-codec", "gzip")
	if strings.Join(got, " ") != "--compression-codec gzip --topic t" {
		t.Errorf("withOptionalValue = %q", got)
	}
	got = withOptionalValue(strings.Fields("--topic t --compression-codec"), "compression-codec", "gzip")
	if strings.Join(got, " ") != "--topic t --compression-codec gzip" {
		t.Errorf("withOptionalValue at the end = %q", got)
	}
}

func TestMessageFormatter(t *testing.T) {
	r := &kgo.Record{Key: []byte("k"), Value: nil, Partition: 3, Offset: 7, Timestamp: time.UnixMilli(1700000000123),
		Headers: []kgo.RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "h2"}}}
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{}, "null\n"},
		{map[string]string{"print.key": "true", "null.literal": "NULL"}, "k\tNULL\n"},
		{map[string]string{"print.timestamp": "true", "print.partition": "true", "print.offset": "true", "print.headers": "true",
			"print.key": "true", "key.separator": " | ", "print.value": "false"}, "CreateTime:1700000000123 | Partition:3 | Offset:7 | h1:v1,h2:null | k\n"},
		{map[string]string{"print.key": "true", "key.separator": `\t`, "line.separator": `\r\n`}, "k\tnull\r\n"},
	} {
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		newMessageFormatter(c.props).write(w, r)
		w.Flush()
		if buf.String() != c.want {
			t.Errorf("%v: %q, want %q", c.props, buf.String(), c.want)
		}
	}
}

func TestClientProperties(t *testing.T) {
	defer func() { kcli.DefaultAuth, kcli.TLS = kcli.Auth{}, kcli.TLSSettings{} }()
	dir := t.TempDir()
	path := filepath.Join(dir, "client.properties")
	os.WriteFile(path, []byte(`security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="alice" password="al ice";
ssl.truststore.type=PEM
ssl.truststore.location=/etc/ca.pem
ssl.endpoint.identification.algorithm=
`), 0o600)
	props, err := loadClientProperties(path)
	if err != nil {
		t.Fatal(err)
	}
	protocol, err := applyClientProperties(props)
	if err != nil || protocol != "SASL_SSL" {
		t.Fatalf("protocol %q, %v", protocol, err)
	}
	if kcli.DefaultAuth != (kcli.Auth{Mechanism: "SCRAM-SHA-512", User: "alice", Password: "al ice"}) {
		t.Errorf("auth %+v", kcli.DefaultAuth)
	}
	if !kcli.TLS.Enable || kcli.TLS.CAFile != "/etc/ca.pem" || !kcli.TLS.SkipHostname {
		t.Errorf("tls %+v", kcli.TLS)
	}
	for props, want := range map[string]string{
		"security.protocol=SSL\nssl.truststore.location=/x/truststore.jks\n":         "ferry reads PEM",
		"security.protocol=SASL_PLAINTEXT\n":                                         "GSSAPI",
		"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n":                   "sasl.jaas.config is needed",
		"security.protocol=TLS\n":                                                    "want PLAINTEXT, SSL",
		"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=x": "control flag",
	} {
		os.WriteFile(path, []byte(props), 0o600)
		p, err := loadClientProperties(path)
		if err == nil {
			_, err = applyClientProperties(p)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", props, err, want)
		}
	}
}

func TestFormatJavaDate(t *testing.T) {
	at := time.Date(2024, 3, 1, 9, 5, 7, 42e6, time.UTC)
	if got := formatJavaDate(at, "yyyy-MM-dd HH:mm:ss:SSS"); got != "2024-03-01 09:05:07:042" {
		t.Errorf("got %q", got)
	}
}

func TestClientPropertyOpts(t *testing.T) {
	opts, err := producerPropertyOpts(map[string]string{"client.id": "ops", "linger.ms": "5", "batch.size": "16384",
		"request.timeout.ms": "30000", "retries": "3", "enable.idempotence": "false", "bootstrap.servers": "ignored:1"})
	if err != nil || len(opts) != 6 {
		t.Fatalf("producer options: %d, %v", len(opts), err)
	}
	if opts, err := consumerPropertyOpts(map[string]string{"isolation.level": "read_committed", "fetch.max.bytes": "1048576", "group.id": "ignored"}); err != nil || len(opts) != 2 {
		t.Fatalf("consumer options: %d, %v", len(opts), err)
	}
	for _, bad := range []map[string]string{{"linger.ms": "soon"}, {"batch.size": "0"}, {"retries": "-1"}} {
		if _, err := producerPropertyOpts(bad); err == nil {
			t.Errorf("producer %v accepted", bad)
		}
	}
	for _, bad := range []map[string]string{{"isolation.level": "serializable"}, {"fetch.max.bytes": "0"}} {
		if _, err := consumerPropertyOpts(bad); err == nil {
			t.Errorf("consumer %v accepted", bad)
		}
	}
}

// TestClientPropertiesRead: the one reader of the console tools' and perf
// tests' client properties: the file's, overlaid by those given one by
// one; --bootstrap-server, else the tool's fallback, else the tool's
// usage error.
func TestClientPropertiesRead(t *testing.T) {
	defer func() { kcli.DefaultAuth, kcli.TLS = kcli.Auth{}, kcli.TLSSettings{} }()
	path := filepath.Join(t.TempDir(), "producer.properties")
	os.WriteFile(path, []byte("client.id=from-file\nlinger.ms=7\nbootstrap.servers=file:9092\n"), 0o600)
	tool := func(args ...string) (*kafkaTool, *clientProperties) {
		tl := newKafkaTool("kafka-producer-perf-test.sh", "", "", false)
		c := tl.clientPropertyFlags("producer-props", "", "", "producer.config", "", "")
		if err := tl.parse(args); err != nil {
			t.Fatal(err)
		}
		return tl, c
	}
	fromProps := func(p map[string]string) string { return p["bootstrap.servers"] }
	tl, c := tool("--producer.config", path, "--producer-props", "client.id=given", "--producer-props", "acks=1")
	props, bootstrap, err := c.read(tl, fromProps, "no servers")
	if err != nil || bootstrap != "file:9092" {
		t.Fatalf("bootstrap %q, %v", bootstrap, err)
	}
	if props["client.id"] != "given" || props["linger.ms"] != "7" || props["acks"] != "1" {
		t.Fatalf("properties %v: the given ones must win over the file's and keep the rest", props)
	}
	tl, c = tool("--bootstrap-server", "flag:9092", "--producer.config", path)
	if _, bootstrap, err := c.read(tl, fromProps, "no servers"); err != nil || bootstrap != "flag:9092" {
		t.Fatalf("--bootstrap-server must win over the fallback: %q, %v", bootstrap, err)
	}
	tl, c = tool()
	if _, _, err := c.read(tl, fromProps, "no servers"); err == nil || !strings.Contains(err.Error(), "no servers") {
		t.Fatalf("nothing naming a server: %v, want the tool's usage error", err)
	}
	tl, c = tool("--bootstrap-server", "flag:9092", "--producer-props", "no-equals-sign")
	if _, _, err := c.read(tl, nil, ""); err == nil {
		t.Fatal("a property without key=value was accepted")
	}
	tl, c = tool("--bootstrap-server", "flag:9092", "--producer-props", "security.protocol=TLS")
	if _, _, err := c.read(tl, nil, ""); err == nil || !strings.Contains(err.Error(), "want PLAINTEXT, SSL") {
		t.Fatalf("a bad security.protocol: %v", err)
	}
}
