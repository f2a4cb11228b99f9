package cluster_test

import (
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
	"github.com/ferry-mq/ferry/test/harness"
)

const usersPassword = "cluster-Pw-93b1e7"

// describeOn asks one broker for user's SCRAM mechanisms; that broker
// answers from its own copy of the credentials.
func describeOn(t *testing.T, cl *kgo.Client, broker int32, user string) (mechs []int8, code int16) {
	t.Helper()
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
	u.Name = user
	req.Users = append(req.Users, u)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(int(broker)))
	if err != nil {
		t.Fatalf("describe on broker %d: %v", broker, err)
	}
	r := resp.Results[0]
	for _, c := range r.CredentialInfos {
		mechs = append(mechs, c.Mechanism)
	}
	return mechs, r.ErrorCode
}

// A user created through broker 1 reaches broker 3's credentials (through
// ZooKeeper's /config/users and a change notification), in Kafka's
// format; so does one created offline in ZooKeeper; a deleted one leaves
// every broker.
func TestUsersReachEveryBroker(t *testing.T) {
	nodes := startCluster(t, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(nodes)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	salt := []byte("0123456789abcdef")
	salted, err := auth.SaltedPassword(auth.ScramSHA512, usersPassword, salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "alice", 2, 4096, salt, salted
	alter.Upsertions = append(alter.Upsertions, up)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	harness.WaitFor(t, "three brokers in the metadata", 30*time.Second, func() bool {
		meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl) // also tells the client where brokers are
		return err == nil && len(meta.Brokers) == 3
	})
	resp, err := alter.RequestWith(ctx, cl.Broker(1))
	if err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("create alice through broker 1: %v %+v", err, resp)
	}
	took := harness.WaitFor(t, "alice on broker 3", 15*time.Second, func() bool {
		mechs, code := describeOn(t, cl, 3, "alice")
		return code == 0 && slices.Equal(mechs, []int8{2})
	})
	t.Logf("alice reached broker 3 in %v", took)

	cfg, err := auth.ZKUserConfig(zkOf(t, nodes[0]), "alice")
	if err != nil {
		t.Fatal(err)
	}
	kafkaForm := regexp.MustCompile(`^salt=[A-Za-z0-9+/=]+,stored_key=[A-Za-z0-9+/=]+,server_key=[A-Za-z0-9+/=]+,iterations=4096$`)
	if len(cfg) != 1 || !kafkaForm.MatchString(cfg["SCRAM-SHA-512"]) {
		t.Fatalf("/config/users/alice: %v", cfg)
	}
	stored, err := auth.ParseScramCredential(auth.ScramSHA512, cfg["SCRAM-SHA-512"])
	if err != nil || !stored.VerifyPassword(usersPassword) {
		t.Fatalf("the stored verifier does not check the password: %v", err)
	}

	// Offline, straight into ZooKeeper, as an operator bootstrapping the
	// cluster's first user would.
	zkConnect := nodes[0].Args[slices.Index(nodes[0].Args, "--zookeeper")+1]
	cmd := exec.Command(harness.Binary(t), "users", "create", "carol", "--zookeeper", zkConnect)
	cmd.Stdin = strings.NewReader(usersPassword + "\n")
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), usersPassword) {
		t.Fatalf("ferry users create --zookeeper: %v\n%s", err, out)
	}
	harness.WaitFor(t, "carol on broker 3", 15*time.Second, func() bool {
		_, code := describeOn(t, cl, 3, "carol")
		return code == 0
	})

	del := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = "alice", 2
	del.Deletions = append(del.Deletions, d)
	if resp, err := del.RequestWith(ctx, cl.Broker(1)); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("delete alice through broker 1: %v %+v", err, resp)
	}
	harness.WaitFor(t, "alice gone from broker 3", 15*time.Second, func() bool {
		_, code := describeOn(t, cl, 3, "alice")
		return code == kerr.ResourceNotFound.Code
	})
	for _, n := range nodes {
		if strings.Contains(n.Logs(), usersPassword) {
			t.Errorf("a broker logged the password")
		}
	}
}
