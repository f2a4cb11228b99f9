package idempotency

import (
	"bytes"
	"strings"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	in := storedKey{state: stateDone, fp: fp("x"), created: 1234567,
		answer: Answer{Status: 503, ContentType: "application/json", Body: []byte(`{"error_code":50303}`)}}
	out, err := decodeValue(encodeValue(in))
	if err != nil {
		t.Fatal(err)
	}
	if out.state != in.state || out.fp != in.fp || out.created != in.created || out.answer.Status != 503 ||
		out.answer.ContentType != in.answer.ContentType || !bytes.Equal(out.answer.Body, in.answer.Body) {
		t.Fatalf("got %+v", out)
	}
	v := encodeValue(in)
	for _, bad := range [][]byte{nil, v[:10], v[:len(v)-1], append(append([]byte{}, v...), 0), append([]byte{9}, v[1:]...)} {
		if _, err := decodeValue(bad); err == nil {
			t.Errorf("decoded %d bad bytes", len(bad))
		}
	}
}

func TestValidKey(t *testing.T) {
	for _, k := range []string{"a", "8e03978e-40d5-43e8-bc93-6894a57f9324", strings.Repeat("k", MaxKeyBytes), "a:b/c=d+e~_."} {
		if err := ValidKey(k); err != nil {
			t.Errorf("%q: %v", k, err)
		}
	}
	for _, k := range []string{"", strings.Repeat("k", MaxKeyBytes+1), "a b", "a\"b", `a\b`, "é", "a\x00", "a\tb"} {
		if err := ValidKey(k); err == nil {
			t.Errorf("%q accepted", k)
		}
	}
}

func TestPartitionOfIsStableAndInRange(t *testing.T) {
	// A fixed value: keys must map to the same partition on every node
	// and version, or a retry would find another owner.
	if p := PartitionOf("order-42", 16); p != PartitionOf("order-42", 16) || p < 0 || p >= 16 {
		t.Fatalf("partition %d", p)
	}
	if got := PartitionOf("a", 1<<20); got != int32(0xe40c292c%(1<<20)) {
		t.Fatalf("PartitionOf(a) = %d: FNV-1a changed", got)
	}
}

func FuzzDecodeValue(f *testing.F) {
	f.Add(encodeValue(storedKey{state: statePending, fp: fp("a"), created: 1}))
	f.Add(encodeValue(storedKey{state: stateDone, created: 2, answer: Answer{Status: 200, ContentType: "t", Body: []byte("b")}}))
	f.Add([]byte{1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := decodeValue(b)
		if err != nil {
			return
		}
		if again := encodeValue(k); !bytes.Equal(again, b) {
			t.Fatalf("decoded %x re-encodes to %x", b, again)
		}
	})
}
