package cluster_test

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ferry-mq/ferry/test/harness"
)

// TestRegistryConcurrentDecidersSurviveLeaderKill: the three nodes
// register at once, each node deciding its own writes under the shared
// transactional id (schemaregistry/topicstore_decider.go), into one
// subject and their own; the _schemas leader is killed -9 in the middle.
// No id is handed to two schemas, no schema gets two ids, every
// acknowledged registration is on the survivors with the id it was
// acknowledged with, the subject's versions are 1..n on every node, and
// the killed broker answers the same registry after its restart.
func TestRegistryConcurrentDecidersSurviveLeaderKill(t *testing.T) {
	nodes := startCluster(t, 3)
	if _, err := registryCall(t, nodes[0], "PUT", "/config", map[string]string{"compatibility": "NONE"}, nil); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[int]string{} // id -> schema
	ackedAfterKill := 0
	killedAt := time.Time{}
	ack := func(id int, schema string) {
		mu.Lock()
		defer mu.Unlock()
		if prev, taken := acked[id]; taken && prev != schema {
			t.Errorf("id %d acknowledged for %s and for %s", id, prev, schema)
		}
		acked[id] = schema
		if !killedAt.IsZero() {
			ackedAfterKill++
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for n, node := range nodes {
		for _, subject := range []string{"shared-value", fmt.Sprintf("node%d-value", n)} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					schema := recordSchema(fmt.Sprintf("N%dS%sR%d", n, subject[:4], i))
					id, err := register(t, node, subject, schema)
					if err == nil {
						ack(id, schema)
					}
					// Failures (the killed node, the failover) are retried
					// with new schemas; only acknowledgements are checked.
				}
			}()
		}
	}
	harness.WaitFor(t, "20 registrations before the kill", 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 20
	})
	adm := kadm.NewClient(adminOn(t, nodes))
	leader := schemasLeader(t, adm)
	if leader < 1 {
		t.Fatal("_schemas has no leader")
	}
	mu.Lock()
	killedAt = time.Now()
	before := len(acked)
	mu.Unlock()
	nodes[leader-1].Kill()
	harness.WaitFor(t, "20 registrations after the kill", 90*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ackedAfterKill >= 20
	})
	close(stop)
	wg.Wait()
	t.Logf("%d registrations acknowledged before the kill of broker %d, %d after", before, leader, ackedAfterKill)

	var survivors []*harness.Node
	for i, n := range nodes {
		if int32(i+1) != leader {
			survivors = append(survivors, n)
		}
	}
	view := checkSameView(t, survivors)
	idOf := map[string]int{}
	for id, schema := range view.Schemas {
		if prev, twice := idOf[schema]; twice {
			t.Fatalf("schema %s has ids %d and %d", schema, prev, id)
		}
		idOf[schema] = id
	}
	for id, schema := range acked {
		if view.Schemas[id] != schema {
			t.Fatalf("acknowledged id %d for %s; the survivors hold %q", id, schema, view.Schemas[id])
		}
	}
	nodes[leader-1].Restart()
	again := viewOf(t, nodes[leader-1])
	if !maps.Equal(again.Schemas, view.Schemas) || !maps.EqualFunc(again.Versions, view.Versions, slices.Equal) {
		t.Fatalf("the restarted broker answers %+v; the others %+v", again, view)
	}
}
