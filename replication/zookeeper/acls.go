package zookeeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// ACLs are laid out as Kafka's AclAuthorizer keeps them, so kafka-acls.sh
// --authorizer-properties zookeeper.connect=… and zkCli.sh read the same:
//
//	/kafka-acl/<Type>/<name>                        LITERAL bindings of a resource
//	/kafka-acl-extended/prefixed/<Type>/<name>      PREFIXED bindings
//	/kafka-acl-changes/acl_changes_<seq>            "Topic:orders": reload that literal pattern
//	/kafka-acl-extended-changes/acl_changes_<seq>   {"version":1,"resourceType":"TOPIC","name":"ord","patternType":"PREFIXED"}
//
// <Type> is Kafka's name (Topic, Group, Cluster, TransactionalId,
// DelegationToken, User; ferry's Subject); each znode holds the JSON of
// its entries, which this package moves as opaque bytes. Writes are
// conditional on the znode's version, and each one creates, in the same
// multi, the notification that makes every broker re-read that znode.
// Notifications are not purged (Kafka deletes them after 15 minutes):
// they are small and written only by ACL changes.
const (
	aclLiteralPath         = "/kafka-acl"
	aclPrefixedPath        = "/kafka-acl-extended/prefixed"
	aclLiteralChangesPath  = "/kafka-acl-changes"
	aclExtendedChangesPath = "/kafka-acl-extended-changes"
	aclChangePrefix        = "acl_changes_"
)

// ErrStaleACL: the ACL znode changed (or appeared) since it was read.
var ErrStaleACL = errors.New("zookeeper: ACL znode changed since it was read")

// ACLNode names one resource pattern's znode.
type ACLNode struct {
	Prefixed bool
	// Type is Kafka's resource type name, like "Topic".
	Type string
	Name string
}

func (n ACLNode) path() string {
	root := aclLiteralPath
	if n.Prefixed {
		root = aclPrefixedPath
	}
	return root + "/" + n.Type + "/" + n.Name
}

func (n ACLNode) validate() error {
	if !validACLTypeName(n.Type) {
		return fmt.Errorf("zookeeper: ACL resource type %q", n.Type)
	}
	if n.Name == "" || n.Name == "." || n.Name == ".." || strings.ContainsAny(n.Name, "/\x00") {
		return fmt.Errorf("zookeeper: ACL resource name %q cannot be a znode name", n.Name)
	}
	return nil
}

// Kafka's upper-case resource type names (the extended notifications')
// by its ZooKeeper path names.
var aclTypeNames = map[string]string{
	"Topic": "TOPIC", "Group": "GROUP", "Cluster": "CLUSTER", "TransactionalId": "TRANSACTIONAL_ID",
	"DelegationToken": "DELEGATION_TOKEN", "User": "USER", "Subject": "SUBJECT",
}

func validACLTypeName(t string) bool { _, ok := aclTypeNames[t]; return ok }

// ReadACLNode reads a pattern's entries JSON and the znode's version
// (ErrNotFound: no bindings).
func (c *Client) ReadACLNode(n ACLNode) ([]byte, int32, error) {
	if err := n.validate(); err != nil {
		return nil, 0, err
	}
	return c.get(n.path())
}

// WriteACLNode replaces a pattern's entries JSON if the znode is still at
// version (-1: it must not exist), deleting it when data is nil, and
// announces the change to every broker: ErrStaleACL when someone wrote
// it meanwhile.
func (c *Client) WriteACLNode(n ACLNode, data []byte, version int32) error {
	if err := n.validate(); err != nil {
		return err
	}
	p, changes, notice := n.path(), aclLiteralChangesPath, []byte(n.Type+":"+n.Name)
	if n.Prefixed {
		changes, notice = aclExtendedChangesPath, encodeExtendedACLChange(n)
	}
	err := c.do(func(bool) error {
		for _, parent := range []string{p[:strings.LastIndexByte(p, '/')], changes} {
			if err := c.ensurePath(parent); err != nil {
				return err
			}
		}
		var op any
		switch {
		case data == nil && version < 0:
			return nil // nothing stored, nothing to store
		case data == nil:
			op = &zk.DeleteRequest{Path: c.abs(p), Version: version}
		case version < 0:
			op = &zk.CreateRequest{Path: c.abs(p), Data: data, Acl: openACL}
		default:
			op = &zk.SetDataRequest{Path: c.abs(p), Data: data, Version: version}
		}
		_, err := multiError(c.conn.Multi(op, &zk.CreateRequest{
			Path: c.abs(changes + "/" + aclChangePrefix), Data: notice, Acl: openACL, Flags: zk.FlagSequence}))
		return err
	})
	if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%w: %s", ErrStaleACL, p)
	}
	if err != nil {
		return fmt.Errorf("zookeeper: write %s: %w", p, err)
	}
	return nil
}

// ACLNodes lists every pattern that has a znode.
func (c *Client) ACLNodes() ([]ACLNode, error) {
	var out []ACLNode
	for _, root := range []struct {
		path     string
		prefixed bool
	}{{aclLiteralPath, false}, {aclPrefixedPath, true}} {
		types, err := c.children(root.path)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, t := range types {
			if !validACLTypeName(t) {
				continue // not a type this broker knows: as Kafka, leave it
			}
			names, err := c.children(root.path + "/" + t)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, name := range names {
				out = append(out, ACLNode{Prefixed: root.prefixed, Type: t, Name: name})
			}
		}
	}
	return out, nil
}

// WatchACLChanges delivers the names of the literal (or, prefixed, the
// extended) change notifications each time they change.
func (c *Client) WatchACLChanges(prefixed bool) *Watch[[]string] {
	if prefixed {
		return c.watchChildNames(aclExtendedChangesPath)
	}
	return c.watchChildNames(aclLiteralChangesPath)
}

// ACLChangeSeq is a notification's sequence number.
func ACLChangeSeq(name string) (int64, bool) {
	digits, ok := strings.CutPrefix(name, aclChangePrefix)
	if !ok || digits == "" {
		return 0, false
	}
	seq, err := strconv.ParseInt(digits, 10, 64)
	return seq, err == nil && seq >= 0
}

// ReadACLChange reads the pattern a notification names (ErrNotFound when
// it was purged; ErrCorrupt when it is not Kafka's format).
func (c *Client) ReadACLChange(prefixed bool, name string) (ACLNode, error) {
	p := aclLiteralChangesPath + "/" + name
	if prefixed {
		p = aclExtendedChangesPath + "/" + name
	}
	data, _, err := c.get(p)
	if err != nil {
		return ACLNode{}, err
	}
	if prefixed {
		return decodeExtendedACLChange(data)
	}
	return decodeLiteralACLChange(data)
}

func decodeLiteralACLChange(data []byte) (ACLNode, error) {
	typ, name, ok := strings.Cut(string(data), ":")
	n := ACLNode{Type: typ, Name: name}
	if !ok || n.validate() != nil {
		return ACLNode{}, fmt.Errorf("%w: ACL change %q", ErrCorrupt, truncate(string(data)))
	}
	return n, nil
}

type extendedACLChange struct {
	Version      int    `json:"version"`
	ResourceType string `json:"resourceType"`
	Name         string `json:"name"`
	PatternType  string `json:"patternType"`
}

func encodeExtendedACLChange(n ACLNode) []byte {
	b, _ := json.Marshal(extendedACLChange{Version: 1, ResourceType: aclTypeNames[n.Type], Name: n.Name, PatternType: "PREFIXED"})
	return b
}

func decodeExtendedACLChange(data []byte) (ACLNode, error) {
	var v extendedACLChange
	if err := decodeJSON(aclExtendedChangesPath, data, &v); err != nil {
		return ACLNode{}, err
	}
	n := ACLNode{Name: v.Name}
	for path, upper := range aclTypeNames {
		if strings.EqualFold(v.ResourceType, upper) || strings.EqualFold(v.ResourceType, path) {
			n.Type = path
		}
	}
	switch {
	case v.Version != 1:
		return ACLNode{}, fmt.Errorf("%w: ACL change version %d", ErrCorrupt, v.Version)
	case strings.EqualFold(v.PatternType, "LITERAL"):
	case strings.EqualFold(v.PatternType, "PREFIXED"):
		n.Prefixed = true
	default:
		return ACLNode{}, fmt.Errorf("%w: ACL change pattern type %q", ErrCorrupt, truncate(v.PatternType))
	}
	if err := n.validate(); err != nil {
		return ACLNode{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return n, nil
}
