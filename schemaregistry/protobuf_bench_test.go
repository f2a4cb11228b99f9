package schemaregistry

import (
	"context"
	"fmt"
	"testing"
)

func protobufSchemaN(i int) string {
	return fmt.Sprintf("syntax = \"proto3\";\npackage bench;\nimport \"google/protobuf/timestamp.proto\";\n\n"+
		"message Event%d {\n  int64 id = 1;\n  string name = 2;\n  repeated string tags = 3;\n  google.protobuf.Timestamp at = 4;\n}\n", i)
}

// BenchmarkProtobufRegister registers new Protobuf schemas (one subject
// per 100) on the embedded store, no HTTP.
func BenchmarkProtobufRegister(b *testing.B) { benchmarkRegister(b, benchProtobuf) }

// BenchmarkProtobufLookupByID is a deserializer's GET /schemas/ids/{id}
// against a warm cache, without HTTP.
func BenchmarkProtobufLookupByID(b *testing.B) { benchmarkLookupByID(b, benchProtobuf) }

// BenchmarkProtobufLookupBySchema is a serializer's POST /subjects/{s}
// with the schema text, with and without normalize=true; the parsed form
// comes from the prepare cache after the first call.
func BenchmarkProtobufLookupBySchema(b *testing.B) {
	for _, normalize := range []bool{false, true} {
		b.Run(fmt.Sprintf("normalize=%v", normalize), func(b *testing.B) {
			r := benchRegistry(b, Config{})
			ctx := context.Background()
			req := SchemaRequest{Schema: protobufSchemaN(0), SchemaType: TypeProtobuf, Normalize: normalize}
			if _, err := r.Register(ctx, "s", req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Lookup(ctx, "s", req, false); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lookups/s")
		})
	}
}
