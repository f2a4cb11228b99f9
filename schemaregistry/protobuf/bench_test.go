package protobuf

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(orderSchema, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanonical(b *testing.B) {
	f := mustParse(b, orderSchema, nil)
	b.ReportAllocs()
	for b.Loop() {
		_ = f.Canonical()
	}
}

func BenchmarkCheck(b *testing.B) {
	oldF := mustParse(b, orderSchema, nil)
	newF := mustParse(b, orderSchema+"message Extra { int32 x = 1; }", nil)
	b.ReportAllocs()
	for b.Loop() {
		if problems := Check(newF, oldF); len(problems) != 0 {
			b.Fatal(problems)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	f := mustParse(b, orderSchema, nil)
	payload, _ := proto.Marshal(newOrder(b, f))
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Validate(nil, payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToJSON(b *testing.B) {
	f := mustParse(b, orderSchema, nil)
	payload, _ := proto.Marshal(newOrder(b, f))
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.ToJSON(nil, payload, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}
