package schemaregistry_test

import (
	"context"
	"fmt"
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

// BenchmarkRegister measures registering new schemas through Registry
// on each store (no HTTP): the embedded journal fsyncs each one; the
// PostgreSQL store runs a transaction under the advisory lock.
func BenchmarkRegister(b *testing.B) {
	for _, store := range []struct {
		name string
		open func(b *testing.B) sr.Store
	}{
		{"embedded", func(b *testing.B) sr.Store {
			s, err := sr.OpenEmbedded(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"postgres", func(b *testing.B) sr.Store { return openPostgres(b, pgtest.DSN(b)) }},
	} {
		b.Run(store.name, func(b *testing.B) {
			r, err := sr.New(store.open(b), sr.Config{DefaultCompatibility: sr.None, Logger: storetest.Logger()})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				schema := fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"id","type":"long"}]}`, i)
				if _, err := r.Register(ctx, fmt.Sprintf("bench-%d", i/100), sr.SchemaRequest{Schema: schema}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "schemas/s")
		})
	}
}
