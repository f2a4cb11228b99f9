package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestACLsReachEveryBroker: an ACL created through broker 1 is enforced
// by broker 3 without a restart, one made through broker 2's HTTP too,
// and the znodes are Kafka's.
//
// Until the Kafka listener authenticates, brokers and clients are all
// User:ANONYMOUS, so listing it in super.users (what a secured cluster
// does for its brokers' principal) would let the clients do anything as
// well. This cluster instead sets allow.everyone.if.no.acl.found: the
// cluster resource has no bindings, so the brokers' inter-broker requests
// (CLUSTER_ACTION) pass while topic ACLs decide the clients' requests.
func TestACLsReachEveryBroker(t *testing.T) {
	nodes := startCluster(t, 3, "--authorizer-class-name", "ferry", "--allow-everyone-if-no-acl-found", "true",
		"--super-users", "User:ferry-broker")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "acl-t"); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "acl-t's leader", 30*time.Second, func() bool { return leaderOf(t, adm, "acl-t") >= 0 })

	// A client of broker 3 alone.
	cl3, err := kgo.NewClient(kgo.SeedBrokers(nodes[2].KafkaAddr), kgo.DefaultProduceTopic("acl-t"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(3))
	if err != nil {
		t.Fatal(err)
	}
	defer cl3.Close()
	describedBy3 := func() int16 {
		req := kmsg.NewPtrMetadataRequest()
		topic := "acl-t"
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
		resp, err := req.RequestWith(ctx, cl3.Broker(3))
		if err != nil || len(resp.Topics) != 1 {
			return -1
		}
		return resp.Topics[0].ErrorCode
	}
	if code := describedBy3(); code != 0 {
		t.Fatalf("broker 3 describes acl-t with code %d before any ACL", code)
	}

	// Through broker 1, over the Kafka protocol: only alice may write.
	out, err := exec.CommandContext(ctx, harness.Binary(t), "acls", "add", "--bootstrap", nodes[0].KafkaAddr,
		"--allow-principal", "User:alice", "--topic", "acl-t", "--operation", "Write").CombinedOutput()
	if err != nil {
		t.Fatalf("ferry acls add: %v\n%s", err, out)
	}
	took := harness.WaitFor(t, "broker 3 refusing to describe acl-t to ANONYMOUS", 15*time.Second, func() bool {
		return describedBy3() == kerr.TopicAuthorizationFailed.Code
	})
	t.Logf("broker 3 enforced broker 1's ACL %v after it was created", took)
	err = cl3.ProduceSync(ctx, &kgo.Record{Value: []byte("denied")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce through broker 3: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// Through broker 2, over HTTP: ANONYMOUS may write too.
	req, _ := http.NewRequest("POST", nodes[1].URL+"/admin/acls", strings.NewReader(`{"acls":[
		{"resource_type":"TOPIC","resource_name":"acl-t","principal":"User:ANONYMOUS","operation":"WRITE"}]}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("POST /admin/acls on broker 2: %d %s", res.StatusCode, body)
	}
	harness.WaitFor(t, "broker 3 describing acl-t again", 15*time.Second, func() bool { return describedBy3() == 0 })
	if err := cl3.ProduceSync(ctx, &kgo.Record{Value: []byte("allowed")}).FirstErr(); err != nil {
		t.Fatalf("acks=all produce through broker 3 once allowed (followers replicate under the authorizer): %v", err)
	}

	checkACLZnodes(t, nodes[0])
}

// checkACLZnodes reads the ACL znodes as zkCli.sh would.
func checkACLZnodes(t *testing.T, node *harness.Node) {
	t.Helper()
	i := slices.Index(node.Args, "--zookeeper")
	server, chroot, _ := strings.Cut(node.Args[i+1], "/")
	conn, _, err := zk.Connect([]string{server}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data, _, err := conn.Get("/" + chroot + "/kafka-acl/Topic/acl-t")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Version int `json:"version"`
		ACLs    []struct {
			Principal, PermissionType, Operation, Host string
		} `json:"acls"`
	}
	if err := json.Unmarshal(data, &v); err != nil || v.Version != 1 || len(v.ACLs) != 2 {
		t.Fatalf("/kafka-acl/Topic/acl-t = %s (%v)", data, err)
	}
	for _, a := range v.ACLs {
		if a.PermissionType != "Allow" || a.Operation != "Write" || a.Host != "*" ||
			a.Principal != "User:alice" && a.Principal != "User:ANONYMOUS" {
			t.Fatalf("entry %+v in %s", a, data)
		}
	}
	changes, _, err := conn.Children("/" + chroot + "/kafka-acl-changes")
	if err != nil || len(changes) != 2 || !strings.HasPrefix(changes[0], "acl_changes_") {
		t.Fatalf("/kafka-acl-changes: %v (%v)", changes, err)
	}
	notice, _, err := conn.Get("/" + chroot + "/kafka-acl-changes/" + changes[0])
	if err != nil || string(notice) != "Topic:acl-t" {
		t.Fatalf("notification %q (%v)", notice, err)
	}
}
