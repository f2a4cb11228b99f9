package zookeeper

import "testing"

func FuzzDecodeACLChange(f *testing.F) {
	f.Add([]byte("Topic:orders"), false)
	f.Add(encodeExtendedACLChange(ACLNode{Prefixed: true, Type: "Group", Name: "g-"}), true)
	f.Add([]byte(`{"version":1,"resourceType":"TOPIC","name":"a/b","patternType":"PREFIXED"}`), true)
	f.Add([]byte(":"), false)
	f.Fuzz(func(t *testing.T, data []byte, extended bool) {
		var n ACLNode
		var err error
		if extended {
			n, err = decodeExtendedACLChange(data)
		} else {
			n, err = decodeLiteralACLChange(data)
		}
		if err == nil && n.validate() != nil {
			t.Fatalf("decoded an invalid node %+v", n)
		}
	})
}
