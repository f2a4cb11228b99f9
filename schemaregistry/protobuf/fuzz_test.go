package protobuf

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

func FuzzParse(f *testing.F) {
	f.Add(orderSchema, "")
	f.Add(explicitEntrySchema, explicitEntrySchema)
	f.Add(nestedSchema, p3+"package d; message D {}")
	f.Add(p2+"message M { required int32 a = 1 [default = 3]; optional group G = 2 { } extensions 10 to max; }", "")
	f.Add(p3+"import \"dep.proto\"; message M { d.D x = 1; }", p3+"package d; message D { oneof o { int32 a = 1; } }")
	f.Add(p3+"message M { option (confluent.message_meta) = { doc: \"x\" }; }", "")
	f.Add("CgZzLnByb3RvIgMKAU0=", "") // base64 FileDescriptorProto {name: "s.proto", message_type: [{name: "M"}]}
	f.Fuzz(func(t *testing.T, text, dep string) {
		file, err := Parse(text, map[string]string{"dep.proto": dep})
		if err != nil {
			return
		}
		canonical := file.Canonical()
		again, err := Parse(canonical, map[string]string{"dep.proto": dep})
		if err != nil {
			// A few texts only the original layout names (a relative type
			// that the canonical form qualifies) are fine; the form must
			// at least be produced without panicking.
			return
		}
		if again.Canonical() != canonical {
			t.Fatalf("canonical form not stable:\n%s\n---\n%s", canonical, again.Canonical())
		}
		if problems := Check(file, again); len(problems) != 0 {
			t.Fatalf("a schema is incompatible with its own canonical form: %v", problems)
		}
		// The written form (identity without normalize=true) is stable too,
		// and normalizes to the same canonical form.
		written := file.Written()
		if w, err := Parse(written, map[string]string{"dep.proto": dep}); err == nil {
			if w.Written() != written || w.Canonical() != canonical {
				t.Fatalf("written form not stable:\n%s\n---\n%s", written, w.Written())
			}
		}
		for _, name := range file.MessageNames() {
			if _, err := file.MessageIndexes(name); err != nil {
				t.Fatalf("MessageIndexes(%q): %v", name, err)
			}
		}
	})
}

func FuzzDecodeIndexes(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{6, 0, 4, 2})
	f.Add([]byte{0xfe, 0x01})
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		indexes, n, err := DecodeIndexes(b)
		if err != nil {
			return
		}
		if n <= 0 || n > len(b) || len(indexes) == 0 || len(indexes) > MaxIndexes {
			t.Fatalf("DecodeIndexes(%x) = %v, %d", b, indexes, n)
		}
		again, m, err := DecodeIndexes(EncodeIndexes(indexes))
		if err != nil || m == 0 || len(again) != len(indexes) {
			t.Fatalf("re-encoding %v: %v, %d, %v", indexes, again, m, err)
		}
		for i := range again {
			if again[i] != indexes[i] {
				t.Fatalf("re-encoding %v gave %v", indexes, again)
			}
		}
	})
}

func FuzzValidate(f *testing.F) {
	schema, err := Parse(orderSchema, nil)
	if err != nil {
		f.Fatal(err)
	}
	good, _ := proto.Marshal(newOrder(f, schema))
	f.Add(good, uint8(0))
	f.Add(nestNodes(20), uint8(0))
	f.Add([]byte{0x12, 0x00, 0x12, 0x00}, uint8(1))
	f.Add([]byte{0x0a, 0x02, 0x08, 0x01}, uint8(2))
	f.Fuzz(func(t *testing.T, payload []byte, which uint8) {
		indexes := [][]int{{0}, {0, 0}, {1}, {2}}[int(which)%4]
		err := schema.Validate(indexes, payload)
		js, jerr := schema.ToJSON(indexes, payload, 1<<16)
		if err == nil && jerr == nil && len(js) > 1<<16 {
			t.Fatalf("ToJSON gave %d bytes over its budget", len(js))
		}
		if err != nil && jerr == nil {
			t.Fatalf("ToJSON accepted what Validate refused: %v", err)
		}
	})
}

func FuzzReadTextForm(f *testing.F) {
	f.Add(explicitEntrySchema)
	f.Add(mapFieldSchema)
	f.Add("message A { repeated E e = 1; message E { option map_entry = true; int32 key = 1; string value = 2; } }")
	f.Fuzz(func(t *testing.T, text string) {
		form := readTextForm("x.proto", text)
		if form.rewritten != "" && len(form.rewritten) > len(text)+len(text)/2+64 {
			t.Fatalf("rewrite grew %d bytes to %d", len(text), len(form.rewritten))
		}
	})
}
