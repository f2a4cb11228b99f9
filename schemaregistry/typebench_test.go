package schemaregistry

import (
	"context"
	"fmt"
	"testing"
)

// The registry benchmarks of each schema type (JSON Schema, Protobuf) run
// the same setups, written once here: a type is its name and its n-th
// schema, all distinct.
type benchType struct {
	name    string
	schemaN func(n int) string
}

var (
	benchJSONSchema = benchType{TypeJSONSchema, jsonSchemaN}
	benchProtobuf   = benchType{TypeProtobuf, protobufSchemaN}
)

// benchRegistry is a registry on an embedded store in a temp dir, closed
// when the benchmark ends.
func benchRegistry(b *testing.B, cfg Config) *Registry {
	b.Helper()
	store, err := OpenEmbedded(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r, err := New(store, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

// benchmarkRegister registers new schemas of typ (one subject per 100)
// on the embedded store, no HTTP.
func benchmarkRegister(b *testing.B, typ benchType) {
	r := benchRegistry(b, Config{DefaultCompatibility: None})
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := r.Register(ctx, fmt.Sprintf("bench-%d", i/100), SchemaRequest{Schema: typ.schemaN(i), SchemaType: typ.name}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "schemas/s")
}

// benchmarkLookupByID is a deserializer's GET /schemas/ids/{id} of a typ
// schema against a warm cache, without HTTP.
func benchmarkLookupByID(b *testing.B, typ benchType) {
	r := benchRegistry(b, Config{})
	ctx := context.Background()
	id, err := r.Register(ctx, "s", SchemaRequest{Schema: typ.schemaN(0), SchemaType: typ.name})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.SchemaByID(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
}
