package acl

import (
	"encoding/json"
	"fmt"

	"github.com/ferry-mq/ferry/server/auth"
)

// The JSON of one pattern's entries, as Kafka writes it in ZooKeeper's
// /kafka-acl/<Type>/<name>:
//
//	{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"}]}
type entriesJSON struct {
	Version int         `json:"version"`
	ACLs    []entryJSON `json:"acls"`
}

type entryJSON struct {
	Principal      string `json:"principal"`
	PermissionType string `json:"permissionType"`
	Operation      string `json:"operation"`
	Host           string `json:"host"`
}

// maxEntriesBytes bounds what decodeEntries reads: ZooKeeper's own znode
// limit (jute.maxbuffer) is 1 MiB, a file of every binding 64 MiB.
const maxEntriesBytes = 64 << 20

func encodeEntry(e Entry) entryJSON {
	perm := "Allow"
	if e.Permission == auth.Deny {
		perm = "Deny"
	}
	return entryJSON{Principal: e.Principal.String(), PermissionType: perm, Operation: OperationKafkaName(e.Operation), Host: e.Host}
}

// EncodeEntries is Kafka's ACL znode JSON for entries.
func EncodeEntries(entries []Entry) []byte {
	v := entriesJSON{Version: 1, ACLs: make([]entryJSON, 0, len(entries))}
	for _, e := range entries {
		v.ACLs = append(v.ACLs, encodeEntry(e))
	}
	b, _ := json.Marshal(v) // plain strings and ints cannot fail
	return b
}

// DecodeEntries reads Kafka's ACL znode JSON.
func DecodeEntries(data []byte) ([]Entry, error) {
	if len(data) > maxEntriesBytes {
		return nil, fmt.Errorf("ACL JSON of %d bytes is too large", len(data))
	}
	var v entriesJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("ACL JSON: %w", err)
	}
	if v.Version != 1 {
		return nil, fmt.Errorf("ACL JSON version %d: want 1", v.Version)
	}
	out := make([]Entry, 0, len(v.ACLs))
	for _, j := range v.ACLs {
		e, err := decodeEntry(j)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func decodeEntry(j entryJSON) (Entry, error) {
	p, err := auth.ParsePrincipal(j.Principal)
	if err != nil {
		return Entry{}, fmt.Errorf("ACL JSON: %w", err)
	}
	op, err := auth.ParseOperation(j.Operation)
	if err != nil || !definiteOperation(op) {
		return Entry{}, fmt.Errorf("ACL JSON: operation %q", j.Operation)
	}
	perm, err := ParsePermission(j.PermissionType)
	if err != nil || perm == auth.PermissionAny {
		return Entry{}, fmt.Errorf("ACL JSON: permission type %q", j.PermissionType)
	}
	if err := validHost(j.Host); err != nil {
		return Entry{}, fmt.Errorf("ACL JSON: %w", err)
	}
	return Entry{Principal: p, Host: j.Host, Operation: op, Permission: perm}, nil
}

// bindingJSON is one line of FileStore's file: the pattern beside Kafka's
// entry fields.
type bindingJSON struct {
	ResourceType string `json:"resourceType"`
	PatternType  string `json:"patternType"`
	Name         string `json:"name"`
	entryJSON
}

type fileJSON struct {
	Version int           `json:"version"`
	ACLs    []bindingJSON `json:"acls"`
}

func encodeFile(bs []Binding) []byte {
	v := fileJSON{Version: 1, ACLs: make([]bindingJSON, 0, len(bs))}
	for _, b := range bs {
		v.ACLs = append(v.ACLs, bindingJSON{ResourceType: ResourceTypeKafkaName(b.Pattern.Type),
			PatternType: patternTypeName(b.Pattern.PatternType), Name: b.Pattern.Name, entryJSON: encodeEntry(b.Entry)})
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return append(out, '\n')
}

func decodeFile(data []byte) ([]Binding, error) {
	if len(data) > maxEntriesBytes {
		return nil, fmt.Errorf("ACL file of %d bytes is too large", len(data))
	}
	var v fileJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("ACL file: %w", err)
	}
	if v.Version != 1 {
		return nil, fmt.Errorf("ACL file version %d: want 1", v.Version)
	}
	out := make([]Binding, 0, len(v.ACLs))
	for _, j := range v.ACLs {
		t, ok := ParseResourceTypeKafkaName(j.ResourceType)
		if !ok {
			return nil, fmt.Errorf("ACL file: resource type %q", j.ResourceType)
		}
		pt, err := ParsePatternType(j.PatternType)
		if err != nil {
			return nil, fmt.Errorf("ACL file: %w", err)
		}
		e, err := decodeEntry(j.entryJSON)
		if err != nil {
			return nil, err
		}
		b := Binding{Pattern: Pattern{Type: t, Name: j.Name, PatternType: pt}, Entry: e}
		if err := b.Validate(); err != nil {
			return nil, fmt.Errorf("ACL file: %w", err)
		}
		out = append(out, b)
	}
	return out, nil
}
