package acl

import (
	"bytes"
	"testing"

	"github.com/ferry-mq/ferry/server/auth"
)

func FuzzDecodeEntries(f *testing.F) {
	f.Add([]byte(`{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}`))
	f.Add([]byte(`{"version":1,"acls":[{"principal":"User:*","permissionType":"Deny","operation":"DescribeConfigs","host":"10.0.0.1"}]}`))
	f.Add([]byte(`{"version":2,"acls":[]}`))
	f.Add([]byte(`{"version":1,"acls":[{"principal":"alice"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := DecodeEntries(data)
		if err != nil {
			return
		}
		// whatever decodes encodes back to the same entries
		again, err := DecodeEntries(EncodeEntries(entries))
		if err != nil || len(again) != len(entries) {
			t.Fatalf("round trip: %v, %d vs %d", err, len(again), len(entries))
		}
		for i := range entries {
			if again[i] != entries[i] {
				t.Fatalf("round trip changed %v to %v", entries[i], again[i])
			}
		}
	})
}

func FuzzDecodeFile(f *testing.F) {
	f.Add(encodeFile([]Binding{{lit(auth.ResourceTopic, "t"), allow(alice, "*", auth.OpRead)},
		{pre(auth.ResourceSubject, "s-"), deny(bob, "::1", auth.OpAll)}}))
	f.Add([]byte(`{"version":1,"acls":[{"resourceType":"Cluster","patternType":"LITERAL","name":"x"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		bs, err := decodeFile(data)
		if err != nil {
			return
		}
		for _, b := range bs {
			if err := b.Validate(); err != nil {
				t.Fatalf("decoded an invalid binding %v: %v", b, err)
			}
		}
		if !bytes.Equal(encodeFile(bs), encodeFile(mustDecodeFile(t, encodeFile(bs)))) {
			t.Fatal("file encoding is not stable")
		}
	})
}

func mustDecodeFile(t *testing.T, data []byte) []Binding {
	bs, err := decodeFile(data)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}
