package e2e

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

// rawKafkaRequest sends one request at req's own version over a fresh
// connection and decodes the answer; kgo would pick its own version.
func rawKafkaRequest(t *testing.T, addr string, req kmsg.Request, resp kmsg.Response) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(120 * time.Second))
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, 7)      // correlation id
	body = binary.BigEndian.AppendUint16(body, 0xffff) // null client id
	if req.IsFlexible() {
		body = append(body, 0) // no tagged fields
	}
	body = req.AppendTo(body)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := conn.Write(append(frame, body...)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		t.Fatalf("read response: %v", err)
	}
	data := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r, data); err != nil {
		t.Fatal(err)
	}
	data = data[4:] // correlation id
	if resp.IsFlexible() && resp.Key() != 18 {
		data = data[1:]
	}
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(data); err != nil {
		t.Fatalf("decode response: %v", err)
	}
}

// A Metadata v1 request naming 20k unknown topics auto-creates a bounded
// number of them; the node stays healthy and the data dir holds exactly
// the created topics' partitions.
func TestMetadataAutoCreateIsBounded(t *testing.T) {
	node := kafkaNode(t)
	const unknown = 20000
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 1
	for i := range unknown {
		name := fmt.Sprintf("flood-%05d", i)
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
	}
	resp := kmsg.NewPtrMetadataResponse()
	rawKafkaRequest(t, node.KafkaAddr, req, resp)
	created, refused := 0, 0
	for _, rt := range resp.Topics {
		switch rt.ErrorCode {
		case 0:
			created++
		case 3: // UNKNOWN_TOPIC_OR_PARTITION
			refused++
		default:
			t.Fatalf("topic %s: error %d", *rt.Topic, rt.ErrorCode)
		}
	}
	t.Logf("created %d, refused %d of %d", created, refused, unknown)
	if created == 0 || created > 16 || created+refused != unknown {
		t.Fatalf("created %d and refused %d of %d unknown topics; want 1..16 created", created, refused, unknown)
	}
	checkHealthy(t, node)
	dirs := partitionDirs(t, node, "flood-")
	if len(dirs) != created {
		t.Fatalf("%d flood-* directories for %d created topics", len(dirs), created)
	}
	// With auto-creation off, nothing is created at all.
	off := harness.Start(t, "--config", writeProps(t, "auto.create.topics.enable=false\n"))
	off.WaitKafka()
	resp = kmsg.NewPtrMetadataResponse()
	rawKafkaRequest(t, off.KafkaAddr, req, resp)
	for _, rt := range resp.Topics {
		if rt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("auto-create off: topic %s answered %d, want 3", *rt.Topic, rt.ErrorCode)
		}
	}
	if dirs := partitionDirs(t, off, "flood-"); len(dirs) != 0 {
		t.Fatalf("auto-create off left %d directories", len(dirs))
	}
}

// The broker-wide partition bound holds across requests: creates past
// max.partitions answer POLICY_VIOLATION and leave nothing on disk.
func TestPartitionLimitAcrossRequests(t *testing.T) {
	node := harness.Start(t, "--config", writeProps(t, "max.partitions=20\noffsets.topic.num.partitions=1\n"))
	node.WaitKafka()
	var created, policy int
	for round := 0; round < 10; round++ {
		codes := metadataCodes(t, node.KafkaAddr, "limit-%d-%d", round, 16, 0, 44)
		created, policy = created+codes[0], policy+codes[44]
	}
	// __consumer_offsets holds one of the 20 partitions.
	if created != 19 || policy != 160-19 {
		t.Fatalf("created %d, POLICY_VIOLATION %d; want 19 and %d", created, policy, 160-19)
	}
	if dirs := partitionDirs(t, node, "limit-"); len(dirs) != created {
		t.Fatalf("%d limit-* directories for %d topics", len(dirs), created)
	}
	mustPost(t, node.URL+"/topics", "application/json", `{"name":"over","partitions":1}`, 422)
	// Deleting a topic frees its partitions for the next create.
	req, _ := http.NewRequest(http.MethodDelete, node.URL+"/topics/limit-0-0", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 204 {
		t.Fatalf("delete: %v %v", res, err)
	}
	res.Body.Close()
	checkHealthy(t, node)
}

func writeProps(t *testing.T, body string) string {
	t.Helper()
	path := t.TempDir() + "/server.properties"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func partitionDirs(t *testing.T, node *harness.Node, prefix string) []string {
	t.Helper()
	entries, err := os.ReadDir(node.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// checkHealthy: the node answers, creates and deletes a topic, and takes a
// new Kafka connection.
func checkHealthy(t *testing.T, node *harness.Node) {
	t.Helper()
	res, err := http.Get(node.URL + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", res, err)
	}
	res.Body.Close()
	createTopic(t, node, "health-probe", 1)
	req, _ := http.NewRequest(http.MethodDelete, node.URL+"/topics/health-probe", nil)
	res, err = http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 204 {
		t.Fatalf("delete probe topic: %v %v", res, err)
	}
	res.Body.Close()
	// A new Kafka connection is accepted and answered.
	req2 := kmsg.NewPtrMetadataRequest()
	req2.Version = 1
	resp := kmsg.NewPtrMetadataResponse()
	rawKafkaRequest(t, node.KafkaAddr, req2, resp)
	if len(resp.Brokers) != 1 {
		t.Fatalf("metadata on a new connection: %d brokers", len(resp.Brokers))
	}
}

// One client cannot drive the node out of file descriptors: under a
// 2048-fd limit it auto-creates more topics than there are descriptors
// (idle partitions hold none: their files go through the bounded log
// file cache), request after request, every one created or refused by
// the partition bound with POLICY_VIOLATION, and the node still serves
// HTTP, new Kafka connections and topic changes.
func TestAutoCreateCannotExhaustFileDescriptors(t *testing.T) {
	const fdLimit = 2048
	node := harness.StartWithFDLimit(t, fdLimit)
	created, refused := 0, false
	for round := 0; round < 140 && !refused; round++ {
		codes := metadataCodes(t, node.KafkaAddr, "fd-%03d-%02d", round, 16, 0, 44)
		created, refused = created+codes[0], codes[44] > 0
	}
	t.Logf("created %d topics (refused: %v) under %d descriptors", created, refused, fdLimit)
	if !refused && created <= fdLimit {
		t.Fatalf("created only %d topics", created)
	}
	req, _ := http.NewRequest(http.MethodDelete, node.URL+"/topics/fd-000-00", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 204 {
		t.Fatalf("delete: %v %v", res, err)
	}
	res.Body.Close()
	checkHealthy(t, node)
	if dirs := partitionDirs(t, node, "fd-"); len(dirs) > created {
		t.Fatalf("%d fd-* directories for %d created topics", len(dirs), created)
	}
}

// metadataCodes sends one Metadata v1 request naming n topics
// (fmt.Sprintf(format, round, i)), which auto-creates them where allowed,
// and counts the answers' error codes; a code not in allowed fails t.
func metadataCodes(t *testing.T, addr, format string, round, n int, allowed ...int16) map[int16]int {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 1
	for i := range n {
		name := fmt.Sprintf(format, round, i)
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = &name
		req.Topics = append(req.Topics, rt)
	}
	resp := kmsg.NewPtrMetadataResponse()
	rawKafkaRequest(t, addr, req, resp)
	codes := map[int16]int{}
	for _, rt := range resp.Topics {
		if !slices.Contains(allowed, rt.ErrorCode) {
			t.Fatalf("topic %s: error %d", *rt.Topic, rt.ErrorCode)
		}
		codes[rt.ErrorCode]++
	}
	return codes
}
