package schemaregistry_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	sr "github.com/ferry-mq/ferry/schemaregistry"
	"github.com/ferry-mq/ferry/schemaregistry/internal/pgtest"
	"github.com/ferry-mq/ferry/schemaregistry/internal/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestEmbeddedStoreConformance(t *testing.T) {
	storetest.Run(t, storetest.Factory{
		Open: func(t *testing.T) sr.Store { return openEmbedded(t, t.TempDir()) },
		Reopen: func(t *testing.T, s sr.Store) sr.Store {
			dir := filepath.Dir(s.(*sr.EmbeddedStore).Path())
			s.Close()
			return openEmbedded(t, dir)
		},
	})
}

func openEmbedded(t *testing.T, dir string) sr.Store {
	s, err := sr.OpenEmbedded(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPostgresStoreConformance(t *testing.T) {
	pgtest.Require(t)
	storetest.Run(t, storetest.Factory{
		Open: func(t *testing.T) sr.Store { return openPostgres(t, pgtest.DSN(t)) },
		Reopen: func(t *testing.T, s sr.Store) sr.Store {
			dsn := s.(*sr.PostgresStore).DSN()
			s.Close()
			return openPostgres(t, dsn)
		},
	})
}

func openPostgres(t testing.TB, dsn string) sr.Store {
	s, err := sr.OpenPostgres(context.Background(), sr.PostgresConfig{DSN: dsn, Logger: storetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
