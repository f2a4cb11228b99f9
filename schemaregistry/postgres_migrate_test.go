package schemaregistry_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	sr "github.com/ferry-mq/ferry/schemaregistry"
	"github.com/ferry-mq/ferry/schemaregistry/internal/pgtest"
)

// TestPostgresMigrationKeepsIDsAboveOldCounter: a database written by the
// 0001 schema (ids from a counter row, which stays above purged ids) is
// migrated by OpenPostgres; its rows read back unchanged, new ids continue
// above the counter, not just above the stored ids, and versions continue
// after the stored ones.
func TestPostgresMigrationKeepsIDsAboveOldCounter(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	init, err := os.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, stmt := range []string{
		`CREATE TABLE schemaregistry_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
		string(init),
		`INSERT INTO schemaregistry_migrations (name) VALUES ('migrations/0001_init.sql')`,
		// Ids 1..3 stored, 4..7 handed out and purged since.
		`INSERT INTO schemaregistry_schemas (id, fingerprint, schema_type, schema_text) VALUES
			(1, 'fp1', 'AVRO', '"int"'), (2, 'fp2', 'AVRO', '"long"'), (3, 'fp3', 'AVRO', '"string"')`,
		`INSERT INTO schemaregistry_versions (subject, version, schema_id) VALUES ('a', 1, 1), ('a', 2, 2), ('b', 1, 3)`,
		`INSERT INTO schemaregistry_references (schema_id, position, name, subject, version) VALUES (3, 0, 'x', 'a', 1)`,
		`UPDATE schemaregistry_counters SET value = 7 WHERE name = 'schema_id'`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	s := openPostgres(t, dsn)
	st, err := s.Schema(ctx, 3)
	if err != nil || st.Text != `"string"` || len(st.References) != 1 || st.References[0] != (sr.Reference{Name: "x", Subject: "a", Version: 1}) {
		t.Fatalf("schema 3 after the migration: %+v %v", st, err)
	}
	if vs, err := s.Versions(ctx, "a"); err != nil || len(vs) != 2 || vs[1].ID != 2 {
		t.Fatalf("subject a after the migration: %+v %v", vs, err)
	}
	v, err := s.AddVersion(ctx, sr.NewVersion{Subject: "a", ExpectLatest: 2, Schema: sr.StoredSchema{Type: "AVRO", Text: `"double"`, Fingerprint: "fp4"}})
	if err != nil || v.ID != 8 || v.Version != 3 {
		t.Fatalf("first registration after the migration: %+v %v, want id 8 version 3", v, err)
	}
	// The schema already stored keeps its id.
	if v, err := s.AddVersion(ctx, sr.NewVersion{Subject: "c", Schema: sr.StoredSchema{Type: "AVRO", Text: `"long"`, Fingerprint: "fp2"}}); err != nil || v.ID != 2 {
		t.Fatalf("known schema under a new subject: %+v %v, want id 2", v, err)
	}
	if _, err := s.AddVersion(ctx, sr.NewVersion{Subject: "b", ExpectLatest: 0, Schema: sr.StoredSchema{Type: "AVRO", Text: `"bytes"`, Fingerprint: "fp5"}}); !errors.Is(err, sr.ErrStoreConflict) {
		t.Fatalf("stale ExpectLatest on a migrated subject: %v", err)
	}

	// A second node opening the migrated database applies nothing twice.
	s2 := openPostgres(t, dsn)
	if id, err := s2.SchemaID(ctx, "fp4"); err != nil || id != 8 {
		t.Fatalf("second node: %d %v", id, err)
	}
	if v, err := s2.AddVersion(ctx, sr.NewVersion{Subject: "d", Schema: sr.StoredSchema{Type: "AVRO", Text: `"float"`, Fingerprint: "fp6"}}); err != nil || v.ID != 9 {
		t.Fatalf("second node's registration: %+v %v, want id 9", v, err)
	}
}
