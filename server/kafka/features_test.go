package kafka

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/features"
	"github.com/ferry-mq/ferry/server/txn"
	"github.com/ferry-mq/ferry/test/harness"
)

// newFeaturesServer is a transactional single node whose finalized
// features live in dir's ferry-features.json, as `ferry serve` keeps them.
func newFeaturesServer(t *testing.T, dir string) (*testServer, *features.Manager) {
	t.Helper()
	supported := features.Supported(features.MaxTransactionVersion)
	m, err := features.Open(features.Config{Store: features.NewLocalStore(dir), Supported: supported,
		Brokers: func() ([]features.BrokerSupport, error) {
			return []features.BrokerSupport{{ID: 0, Features: supported}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := newTxnTestServerTuned(t, nil, func(c *Config) { c.Features = m })
	needPartitionSide(t, ts)
	return ts, m
}

func updateFeature(c *client, version int16, level int16, typ int8, validateOnly bool) kmsg.UpdateFeaturesResponseResult {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = features.TransactionVersion, level, typ
	u.AllowDowngrade = typ != 1
	req.FeatureUpdates, req.ValidateOnly, req.TimeoutMillis = []kmsg.UpdateFeaturesRequestFeatureUpdate{u}, validateOnly, 5000
	resp := do[*kmsg.UpdateFeaturesResponse](c, req, version)
	if len(resp.Results) != 1 {
		c.t.Fatalf("UpdateFeatures: %d results", len(resp.Results))
	}
	return resp.Results[0]
}

func finalizedTV(c *client) (level int16, epoch int64, produceMax int16) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "ferry-test", "1"
	resp := do[*kmsg.ApiVersionsResponse](c, req, 3)
	for _, f := range resp.FinalizedFeatures {
		if f.Name == features.TransactionVersion {
			level = f.MaxVersionLevel
		}
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 0 {
			produceMax = k.MaxVersion
		}
	}
	return level, resp.FinalizedFeaturesEpoch, produceMax
}

// UpdateFeatures with Kafka 3.9's rules: a new node is at level 2; a
// downgrade needs the downgrade type, levels outside what the broker
// supports and unknown features are INVALID_UPDATE_VERSION, validate-only
// changes nothing; a downgrade and an upgrade are stored (epoch bumped,
// kept across a restart) and ApiVersions advertises them.
func TestUpdateFeatures(t *testing.T) {
	dir := t.TempDir()
	ts, _ := newFeaturesServer(t, dir)
	c := ts.dial(t)
	if level, epoch, produceMax := finalizedTV(c); level != 2 || epoch != 0 || produceMax != 12 {
		t.Fatalf("new node: level %d epoch %d produce max %d, want 2 0 12", level, epoch, produceMax)
	}
	for _, tc := range []struct {
		name    string
		version int16
		level   int16
		typ     int8
		want    int16
	}{
		{"downgrade typed as an upgrade", 1, 1, 1, kerr.InvalidUpdateVersion.Code},
		{"a level ferry does not serve", 1, 3, 1, kerr.InvalidUpdateVersion.Code},
		{"a negative level", 1, -1, 2, kerr.InvalidUpdateVersion.Code},
		{"an unknown upgrade type", 1, 1, 9, kerr.InvalidUpdateVersion.Code},
		{"a downgrade to a newer level", 1, 3, 2, kerr.InvalidUpdateVersion.Code},
	} {
		r := updateFeature(c, tc.version, tc.level, tc.typ, false)
		if r.ErrorCode != tc.want || r.ErrorMessage == nil {
			t.Fatalf("%s: %s %v", tc.name, codeName(r.ErrorCode), r.ErrorMessage)
		}
	}
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "no.such.feature", 1, 1
	req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{u}
	if r := do[*kmsg.UpdateFeaturesResponse](c, req, 1).Results[0]; r.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("unknown feature: %s", codeName(r.ErrorCode))
	}
	if r := updateFeature(c, 1, 1, 2, true); r.ErrorCode != 0 {
		t.Fatalf("validate-only downgrade: %s", codeName(r.ErrorCode))
	}
	if level, epoch, _ := finalizedTV(c); level != 2 || epoch != 0 {
		t.Fatalf("validate-only changed the level: %d epoch %d", level, epoch)
	}
	if r := updateFeature(c, 1, 1, 3, false); r.ErrorCode != 0 {
		t.Fatalf("unsafe downgrade: %s %v", codeName(r.ErrorCode), r.ErrorMessage)
	}
	if level, epoch, produceMax := finalizedTV(c); level != 1 || epoch != 1 || produceMax != 12 {
		t.Fatalf("after the downgrade: level %d epoch %d produce max %d, want 1 1 12", level, epoch, produceMax)
	}
	if r := updateFeature(c, 0, 2, 1, false); r.ErrorCode != 0 {
		t.Fatalf("v0 upgrade: %s %v", codeName(r.ErrorCode), r.ErrorMessage)
	}
	if level, epoch, _ := finalizedTV(c); level != 2 || epoch != 2 {
		t.Fatalf("after the upgrade: level %d epoch %d", level, epoch)
	}
	if r := updateFeature(c, 0, 1, 2, false); r.ErrorCode != 0 {
		t.Fatalf("v0 AllowDowngrade: %s %v", codeName(r.ErrorCode), r.ErrorMessage)
	}
	reopened, _ := newFeaturesServer(t, dir)
	if level, epoch, _ := finalizedTV(reopened.dial(t)); level != 1 || epoch != 3 {
		t.Fatalf("after a restart: level %d epoch %d, want 1 3", level, epoch)
	}
}

// A downgrade to 1 while a version-2 transaction is open neither loses
// nor mixes it: the producer's connection negotiated version 2 and ends
// the transaction as version 2 (Produce v12 adds a partition it had not
// touched, EndTxn v5 commits with a bump), every record is committed; a
// producer that connects after the downgrade runs version 1
// (AddPartitionsToTxn, no bump).
func TestDowngradeWithOpenTransaction(t *testing.T) {
	ts, m := newFeaturesServer(t, t.TempDir())
	createTopic(t, ts, "txn-out", 2)
	keys := &keyCounter{}
	cl := txnClient(t, ts, "open-across", kgo.WithHooks(keys))
	produceInTxn(t, cl, "warm") // a committed transaction before the open one
	if err := endTxn(cl, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	addsBefore := keys.count(kmsg.AddPartitionsToTxn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before"), Partition: 0}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if r := updateFeature(ts.dial(t), 1, 1, 2, false); r.ErrorCode != 0 {
		t.Fatalf("downgrade: %s", codeName(r.ErrorCode))
	}
	if m.Level(features.TransactionVersion) != 1 {
		t.Fatal("the level did not change")
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after"), Partition: 1}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	d, _ := ts.txns.Describe("open-across")
	epochBefore := d.ProducerEpoch
	if err := endTxn(cl, kgo.TryCommit); err != nil {
		t.Fatalf("commit across the downgrade: %v", err)
	}
	if adds := keys.count(kmsg.AddPartitionsToTxn); adds != addsBefore {
		t.Fatalf("the open version-2 transaction sent %d AddPartitionsToTxn", adds-addsBefore)
	}
	harness.WaitFor(t, "the commit completes with a bump", 10*time.Second, func() bool {
		d, code := ts.txns.Describe("open-across")
		return code == 0 && d.State == txn.CompleteCommit && d.ProducerEpoch == epochBefore+1
	})

	late := &keyCounter{}
	cl2 := txnClient(t, ts, "after-downgrade", kgo.WithHooks(late))
	produceInTxn(t, cl2, "v1")
	if err := endTxn(cl2, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if late.count(kmsg.AddPartitionsToTxn) == 0 {
		t.Fatal("a producer connecting after the downgrade used version 2")
	}
	got := readAll(t, ts, kgo.ReadCommitted(), 4)
	slices.Sort(got)
	if !slices.Equal(got, []string{"after", "before", "v1", "warm"}) {
		t.Fatalf("read_committed: %v", got)
	}
}
