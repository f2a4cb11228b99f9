package schemaregistry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sr "github.com/ferry-mq/ferry/schemaregistry"
	"github.com/ferry-mq/ferry/schemaregistry/internal/pgtest"
	"github.com/ferry-mq/ferry/schemaregistry/internal/storetest"

	"github.com/ferry-mq/ferry/test/harness"
)

// twoNodes opens two registries on one database, as two ferry nodes would.
func twoNodes(t *testing.T) (*sr.Registry, *sr.Registry) {
	dsn := pgtest.DSN(t)
	var nodes [2]*sr.Registry
	for i := range nodes {
		r, err := sr.New(openPostgres(t, dsn), sr.Config{Logger: storetest.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = r
	}
	return nodes[0], nodes[1]
}

func record(name string, i int) string {
	return fmt.Sprintf(`{"type":"record","name":"%s","fields":[{"name":"f%d","type":"int"}]}`, name, i)
}

// TestTwoNodesRegisterConcurrently: registrations racing on two nodes
// never share an id or a version, and one schema gets one id.
func TestTwoNodesRegisterConcurrently(t *testing.T) {
	a, b := twoNodes(t)
	ctx := context.Background()
	if _, err := a.SetCompatibility(ctx, "", "NONE"); err != nil {
		t.Fatal(err)
	}
	const perNode, subjects = 12, 3
	type result struct {
		subject, schema string
		id              int
	}
	results := make(chan result, 2*perNode*subjects+2*subjects)
	var wg sync.WaitGroup
	for n, node := range []*sr.Registry{a, b} {
		for s := 0; s < subjects; s++ {
			wg.Add(1)
			go func(n, s int, node *sr.Registry) {
				defer wg.Done()
				subject := fmt.Sprintf("s%d", s)
				for i := 0; i < perNode; i++ {
					schema := record("R", n*1000+i)
					if i%4 == 0 {
						schema = record("Shared", s*1000+i) // both nodes register it
					}
					id, err := node.Register(ctx, subject, sr.SchemaRequest{Schema: schema})
					if err != nil {
						t.Error(err)
						return
					}
					results <- result{subject, schema, id}
				}
			}(n, s, node)
		}
	}
	wg.Wait()
	close(results)
	idOf := map[string]int{}
	schemaOf := map[int]string{}
	for r := range results {
		if prev, ok := idOf[r.schema]; ok && prev != r.id {
			t.Fatalf("schema %s got ids %d and %d", r.schema, prev, r.id)
		}
		if prev, ok := schemaOf[r.id]; ok && prev != r.schema {
			t.Fatalf("id %d handed to %s and %s", r.id, prev, r.schema)
		}
		idOf[r.schema], schemaOf[r.id] = r.id, r.schema
	}
	for s := 0; s < subjects; s++ {
		subject := fmt.Sprintf("s%d", s)
		versions, err := b.Versions(ctx, subject, false)
		if err != nil {
			t.Fatal(err)
		}
		var vs []sr.Version
		for _, v := range versions {
			info, err := a.GetVersion(ctx, subject, v, false)
			if err != nil {
				t.Fatal(err)
			}
			vs = append(vs, sr.Version{Version: v, ID: info.ID})
		}
		// Shared schemas are registered twice but stored once per subject.
		storetest.CheckUnique(t, vs, 2*perNode-perNode/4)
	}
}

// TestTwoNodesCompatibilityRace: two registrations each compatible with
// the latest version but not with each other race on two nodes; exactly
// one wins, the other sees it and answers 409.
func TestTwoNodesCompatibilityRace(t *testing.T) {
	a, b := twoNodes(t)
	ctx := context.Background()
	base := `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
	withInt := `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int","default":0}]}`
	withMap := `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":{"type":"map","values":"int"},"default":{}}]}`
	for round := 0; round < 5; round++ {
		subject := fmt.Sprintf("race%d", round)
		if _, err := a.Register(ctx, subject, sr.SchemaRequest{Schema: base}); err != nil {
			t.Fatal(err)
		}
		b.Versions(ctx, subject, false) // warm b's cache with version 1 only
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, node := range []*sr.Registry{a, b} {
			wg.Add(1)
			go func(i int, node *sr.Registry) {
				defer wg.Done()
				_, errs[i] = node.Register(ctx, subject, sr.SchemaRequest{Schema: []string{withInt, withMap}[i]})
			}(i, node)
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, sr.ErrIncompatible):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d registrations won, want exactly 1 (%v)", round, ok, errs)
		}
	}
}

// TestTwoNodesSeeEachOthersChanges: caches follow the other node's writes.
func TestTwoNodesSeeEachOthersChanges(t *testing.T) {
	a, b := twoNodes(t)
	ctx := context.Background()
	req := sr.SchemaRequest{Schema: record("R", 1)}
	if _, err := b.Versions(ctx, "s", false); !errors.Is(err, sr.ErrSubjectNotFound) {
		t.Fatalf("empty: %v", err) // b caches "no versions"
	}
	id, err := a.Register(ctx, "s", req)
	if err != nil {
		t.Fatal(err)
	}
	// No waiting: a miss in b's cache reloads from the database.
	if info, err := b.Lookup(ctx, "s", req, false); err != nil || info.ID != id {
		t.Fatalf("b's lookup right after a's registration: %+v %v", info, err)
	}
	if _, err := b.GetVersion(ctx, "s", 1, false); err != nil {
		t.Fatalf("b's read right after a's registration: %v", err)
	}
	if _, err := a.DeleteSubject(ctx, "s", false); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "b sees a's soft delete", 10*time.Second, func() bool {
		_, err := b.GetVersion(ctx, "s", 1, false)
		return errors.Is(err, sr.ErrSubjectNotFound)
	})
	if _, err := a.DeleteSubject(ctx, "s", true); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, "b sees a's permanent delete", 10*time.Second, func() bool {
		_, err := b.SchemaByID(ctx, id)
		return errors.Is(err, sr.ErrSchemaNotFound)
	})
}

// TestTwoNodesNewSubjectsConcurrently: eight writers on two nodes create
// subjects at once, half of them registering schemas every writer also
// registers (racing to insert the same new schema under different
// subjects): each schema gets one id, no id is handed to two schemas, and
// every subject holds exactly its one version.
func TestTwoNodesNewSubjectsConcurrently(t *testing.T) {
	a, b := twoNodes(t)
	ctx := context.Background()
	const writers, perWriter = 8, 20
	type result struct {
		subject, schema string
		id              int
	}
	results := make(chan result, writers*perWriter)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		node := []*sr.Registry{a, b}[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				schema := record("Own", w*1000+i)
				if i%2 == 0 {
					schema = record("Shared", i) // every writer registers it
				}
				subject := fmt.Sprintf("w%d-%d", w, i)
				id, err := node.Register(ctx, subject, sr.SchemaRequest{Schema: schema})
				if err != nil {
					t.Error(err)
					return
				}
				results <- result{subject, schema, id}
			}
		}()
	}
	wg.Wait()
	close(results)
	idOf := map[string]int{}
	schemaOf := map[int]string{}
	n := 0
	for r := range results {
		n++
		if prev, ok := idOf[r.schema]; ok && prev != r.id {
			t.Fatalf("schema %s got ids %d and %d", r.schema, prev, r.id)
		}
		if prev, ok := schemaOf[r.id]; ok && prev != r.schema {
			t.Fatalf("id %d handed to %s and %s", r.id, prev, r.schema)
		}
		idOf[r.schema], schemaOf[r.id] = r.id, r.schema
		for _, node := range []*sr.Registry{a, b} {
			info, err := node.GetVersion(ctx, r.subject, 1, false)
			if err != nil || info.ID != r.id {
				t.Fatalf("%s version 1: %+v %v, want id %d", r.subject, info, err, r.id)
			}
			if vs, err := node.Versions(ctx, r.subject, false); err != nil || len(vs) != 1 {
				t.Fatalf("%s versions: %v %v", r.subject, vs, err)
			}
		}
	}
	if want := writers * perWriter; n != want {
		t.Fatalf("%d registrations succeeded, want %d", n, want)
	}
	if want := writers*perWriter/2 + perWriter/2; len(schemaOf) != want {
		t.Fatalf("%d distinct ids, want %d (one per distinct schema)", len(schemaOf), want)
	}
}

// TestTwoNodesRegistrationAfterOtherNodesChanges: a node decides a
// registration from its caches only as far as the database confirms them.
// Right after the other node changes the level or the mode, or registers
// the same schema, this node's registration follows what the database
// holds — whether or not the change's notification has arrived yet.
func TestTwoNodesRegistrationAfterOtherNodesChanges(t *testing.T) {
	a, b := twoNodes(t)
	ctx := context.Background()
	for round := 0; round < 10; round++ {
		subject := fmt.Sprintf("s%d", round)
		if _, err := b.Register(ctx, subject, sr.SchemaRequest{Schema: record("R", 0)}); err != nil {
			t.Fatal(err) // b now caches the subject, its settings and the schema
		}
		// Incompatible under BACKWARD (a new field without a default).
		breaking := sr.SchemaRequest{Schema: `{"type":"record","name":"R","fields":[{"name":"f0","type":"int"},{"name":"g","type":"int"}]}`}
		if _, err := b.Register(ctx, subject, breaking); !errors.Is(err, sr.ErrIncompatible) {
			t.Fatalf("round %d: BACKWARD registration of a breaking change: %v", round, err)
		}
		level := sr.None
		if round%2 == 1 {
			level = "" // the global level instead of the subject's
			if _, err := a.SetCompatibility(ctx, "", sr.None); err != nil {
				t.Fatal(err)
			}
		} else if _, err := a.SetCompatibility(ctx, subject, level); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Register(ctx, subject, breaking); err != nil {
			t.Fatalf("round %d: b's registration right after a set %q to NONE: %v", round, subject+level, err)
		}
		if round%2 == 1 {
			if _, err := a.DeleteCompatibility(ctx, ""); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.SetMode(ctx, subject, sr.ReadOnly, false); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Register(ctx, subject, sr.SchemaRequest{Schema: record("R", 1)}); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("round %d: b's registration right after a made the subject read-only: %v", round, err)
		}
		// A subject b has never seen, made read-only on a before its
		// first version: b assumes it has no settings of its own.
		unseen := fmt.Sprintf("u%d", round)
		if _, err := a.SetMode(ctx, unseen, sr.ReadOnly, false); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Register(ctx, unseen, sr.SchemaRequest{Schema: record("U", round)}); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("round %d: b's registration under a subject a made read-only: %v", round, err)
		}
		// The same schema registered on a, then at once on b under a
		// subject b has not cached: one version, one id.
		fresh := fmt.Sprintf("t%d", round)
		id, err := a.Register(ctx, fresh, sr.SchemaRequest{Schema: record("T", round)})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := b.Register(ctx, fresh, sr.SchemaRequest{Schema: record("T", round)}); err != nil || got != id {
			t.Fatalf("round %d: b registering a's schema again: id %d %v, want %d", round, got, err, id)
		}
		if vs, err := a.Versions(ctx, fresh, false); err != nil || len(vs) != 1 {
			t.Fatalf("round %d: %s has versions %v %v, want one", round, fresh, vs, err)
		}
	}
}
