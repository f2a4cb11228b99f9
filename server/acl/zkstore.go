package acl

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/server/auth"
)

// ZKStore keeps a cluster's bindings in ZooKeeper, in Kafka's layout
// (replication/zookeeper/acls.go), and keeps this broker's authorizer
// current with every broker's writes: each write announces its pattern
// with a change notification, and every ZKStore re-reads the patterns
// the notifications newer than the last it handled name, as Kafka's
// ZkNodeChangeNotificationListener does.
type ZKStore struct {
	zk         *zookeeper.Client
	authorizer *Authorizer
	logger     *slog.Logger
	watches    [2]*zookeeper.Watch[[]string] // literal, extended
	done       chan struct{}
	// reloadMu makes each read of a pattern's znode and its application
	// to the authorizer one step, so the follower and this broker's own
	// writes, racing, never apply an older read after a newer one.
	reloadMu sync.Mutex
}

// maxWriteAttempts bounds the read-modify-write retries of one pattern
// against other brokers' concurrent writes.
const maxWriteAttempts = 20

// OpenZKStore loads every binding into a and follows the changes until
// Close.
func OpenZKStore(zk *zookeeper.Client, a *Authorizer, logger *slog.Logger) (*ZKStore, error) {
	s := &ZKStore{zk: zk, authorizer: a, logger: logger.With("component", "acl"), done: make(chan struct{})}
	// The watches start before the load, so a change made meanwhile is
	// read (again) rather than missed.
	var lasts [2]int64
	for i, prefixed := range []bool{false, true} {
		s.watches[i] = zk.WatchACLChanges(prefixed)
		names, ok := <-s.watches[i].C
		if !ok {
			s.stopWatches()
			return nil, errors.New("acl: ZooKeeper client closed while reading the ACL change notifications")
		}
		lasts[i] = newestSeq(names)
	}
	bs, err := s.loadAll()
	if err != nil {
		s.stopWatches()
		return nil, err
	}
	a.Replace(bs)
	go s.follow(lasts)
	return s, nil
}

func (s *ZKStore) stopWatches() {
	for _, w := range s.watches {
		if w != nil {
			w.Stop()
		}
	}
}

// Close stops following changes.
func (s *ZKStore) Close() {
	s.stopWatches()
	<-s.done
}

func (s *ZKStore) loadAll() ([]Binding, error) {
	nodes, err := s.zk.ACLNodes()
	if err != nil {
		return nil, fmt.Errorf("acl: list ACL znodes: %w", err)
	}
	var bs []Binding
	for _, n := range nodes {
		p, ok := patternOfNode(n)
		if !ok {
			continue
		}
		entries, _, err := s.read(p)
		if err != nil {
			s.logger.Warn("skipping unreadable ACL znode", "pattern", p.String(), "err", err)
			continue
		}
		for _, e := range entries {
			bs = append(bs, Binding{Pattern: p, Entry: e})
		}
	}
	return bs, nil
}

// follow applies notifications from both directories until the watches
// stop.
func (s *ZKStore) follow(lasts [2]int64) {
	defer close(s.done)
	lit, ext := s.watches[0].C, s.watches[1].C
	for lit != nil || ext != nil {
		select {
		case names, ok := <-lit:
			if !ok {
				lit = nil
				continue
			}
			lasts[0] = s.apply(false, names, lasts[0])
		case names, ok := <-ext:
			if !ok {
				ext = nil
				continue
			}
			lasts[1] = s.apply(true, names, lasts[1])
		}
	}
}

// apply reloads the patterns named by the notifications newer than last
// and returns the newest handled. One that cannot be read now is read
// with the next change, as with config changes.
func (s *ZKStore) apply(prefixed bool, names []string, last int64) int64 {
	type notice struct {
		name string
		seq  int64
	}
	var fresh []notice
	for _, n := range names {
		if seq, ok := zookeeper.ACLChangeSeq(n); ok && seq > last {
			fresh = append(fresh, notice{n, seq})
		}
	}
	slices.SortFunc(fresh, func(a, b notice) int { return cmp.Compare(a.seq, b.seq) })
	for _, n := range fresh {
		node, err := s.zk.ReadACLChange(prefixed, n.name)
		if err != nil && !errors.Is(err, zookeeper.ErrNotFound) && !errors.Is(err, zookeeper.ErrCorrupt) {
			s.logger.Warn("reading an ACL change notification", "notification", n.name, "err", err)
			return last
		}
		last = n.seq
		p, ok := patternOfNode(node)
		if err != nil || !ok {
			continue // purged, or not ours to understand: skipped, as Kafka logs and skips
		}
		if _, err := s.reload(p); err != nil {
			s.logger.Warn("reloading an ACL znode", "pattern", p.String(), "err", err)
		}
	}
	return last
}

// reload reads a pattern's znode and applies it to the authorizer.
func (s *ZKStore) reload(p Pattern) ([]Entry, error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	entries, _, err := s.read(p)
	if err != nil {
		return nil, err
	}
	s.authorizer.SetPattern(p, entries)
	return entries, nil
}

// feedsAuthorizer: Update applies what it stored itself (see reloadMu).
func (s *ZKStore) feedsAuthorizer() {}

// read returns a pattern's stored entries and the znode's version (-1:
// absent).
func (s *ZKStore) read(p Pattern) ([]Entry, int32, error) {
	data, version, err := s.zk.ReadACLNode(nodeOfPattern(p))
	if errors.Is(err, zookeeper.ErrNotFound) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, 0, err
	}
	entries, err := DecodeEntries(data)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", p, err)
	}
	return entries, version, nil
}

// Update implements Store with a conditional write, retried while other
// brokers write the same pattern; then it reloads the pattern into the
// authorizer (what it returns may already hold another broker's later
// write).
func (s *ZKStore) Update(p Pattern, fn func([]Entry) []Entry) ([]Entry, error) {
	if strings.ContainsAny(p.Name, "/\x00") || p.Name == "." || p.Name == ".." {
		// Kafka keeps the same layout and cannot store these either.
		return nil, fmt.Errorf("%w: resource name %q cannot be a ZooKeeper znode name", ErrInvalid, p.Name)
	}
	for range maxWriteAttempts {
		stored, version, err := s.read(p)
		if err != nil {
			return nil, err
		}
		next := fn(slices.Clone(stored))
		if slices.Equal(stored, next) {
			return s.reload(p)
		}
		var data []byte
		if len(next) > 0 {
			data = EncodeEntries(next)
		}
		err = s.zk.WriteACLNode(nodeOfPattern(p), data, version)
		if errors.Is(err, zookeeper.ErrStaleACL) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return s.reload(p)
	}
	return nil, fmt.Errorf("acl: %s changed under %d attempts to write it", p, maxWriteAttempts)
}

func nodeOfPattern(p Pattern) zookeeper.ACLNode {
	return zookeeper.ACLNode{Prefixed: p.PatternType == auth.PatternPrefixed, Type: ResourceTypeKafkaName(p.Type), Name: p.Name}
}

func patternOfNode(n zookeeper.ACLNode) (Pattern, bool) {
	t, ok := ParseResourceTypeKafkaName(n.Type)
	pt := auth.PatternLiteral
	if n.Prefixed {
		pt = auth.PatternPrefixed
	}
	return Pattern{Type: t, Name: n.Name, PatternType: pt}, ok && n.Name != ""
}

func newestSeq(names []string) int64 {
	last := int64(-1)
	for _, n := range names {
		if seq, ok := zookeeper.ACLChangeSeq(n); ok && seq > last {
			last = seq
		}
	}
	return last
}
