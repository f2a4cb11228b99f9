package acl

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ferry-mq/ferry/server/auth"
)

// Config is the authorizer's settings, Kafka's names.
type Config struct {
	// SuperUsers are always allowed (super.users).
	SuperUsers []auth.Principal
	// AllowIfNoACL allows an action on a resource no binding applies to
	// (allow.everyone.if.no.acl.found). Default false: denied.
	AllowIfNoACL bool
}

// Authorizer decides actions against the bindings it was last given. It
// implements auth.Authorizer: Authorize is safe for concurrent use, takes
// no lock and does not allocate. Stores feed it with SetPattern and
// Replace.
type Authorizer struct {
	superUsers   map[auth.Principal]struct{}
	allowIfNoACL bool
	// idx is the current snapshot; never modified once stored.
	idx atomic.Pointer[index]
	// writeMu serializes the writers' copy-on-write of idx.
	writeMu sync.Mutex
}

// New returns an authorizer with no bindings.
func New(cfg Config) *Authorizer {
	a := &Authorizer{superUsers: make(map[auth.Principal]struct{}, len(cfg.SuperUsers)), allowIfNoACL: cfg.AllowIfNoACL}
	for _, p := range cfg.SuperUsers {
		a.superUsers[p] = struct{}{}
	}
	a.idx.Store(newIndex())
	return a
}

var _ auth.Authorizer = (*Authorizer)(nil)

// resourceKey indexes the bindings of one pattern type: looking a key up
// with a substring of a resource name does not allocate.
type resourceKey struct {
	typ  auth.ResourceType
	name string
}

// index is an immutable snapshot of every binding, by pattern. Besides
// the two maps of patterns it keeps what makes a lookup cheap (derive):
// hashing names is most of Authorize's cost, so it hashes as few as it can.
type index struct {
	literal  map[resourceKey][]Entry
	prefixed map[resourceKey][]Entry
	count    int

	// wildcard is literal's "*" entries by type (an int8 hashes cheaply).
	wildcard map[auth.ResourceType][]Entry
	// prefixLens lists, per resource type, the distinct lengths of its
	// prefixed patterns' names, ascending: a lookup tries only those.
	prefixLens map[auth.ResourceType][]int
	// heads holds each prefixed pattern's first (up to) four bytes, and
	// headLens their distinct lengths per type: a name whose head is not
	// there has no prefixed pattern, and skips every prefix lookup.
	heads    map[headKey]struct{}
	headLens map[auth.ResourceType][]int
}

type headKey struct {
	typ  auth.ResourceType
	n    uint8
	head uint32
}

const maxHead = 4

func headOf(typ auth.ResourceType, name string, n int) headKey {
	k := headKey{typ: typ, n: uint8(n)}
	for i := range n {
		k.head = k.head<<8 | uint32(name[i])
	}
	return k
}

func newIndex() *index {
	idx := &index{literal: map[resourceKey][]Entry{}, prefixed: map[resourceKey][]Entry{}}
	idx.derive()
	return idx
}

// derive rebuilds the lookup helpers from literal and prefixed.
func (idx *index) derive() {
	idx.wildcard = map[auth.ResourceType][]Entry{}
	for k, entries := range idx.literal {
		if k.name == auth.Wildcard {
			idx.wildcard[k.typ] = entries
		}
	}
	idx.prefixLens = map[auth.ResourceType][]int{}
	idx.heads = map[headKey]struct{}{}
	idx.headLens = map[auth.ResourceType][]int{}
	for k := range idx.prefixed {
		addLen(idx.prefixLens, k.typ, len(k.name))
		n := min(len(k.name), maxHead)
		idx.heads[headOf(k.typ, k.name, n)] = struct{}{}
		addLen(idx.headLens, k.typ, n)
	}
}

func addLen(m map[auth.ResourceType][]int, typ auth.ResourceType, n int) {
	if i, found := slices.BinarySearch(m[typ], n); !found {
		m[typ] = slices.Insert(m[typ], i, n)
	}
}

// mayHavePrefixes reports whether some prefixed pattern of typ could be a
// prefix of name.
func (idx *index) mayHavePrefixes(typ auth.ResourceType, name string) bool {
	for _, n := range idx.headLens[typ] {
		if n > len(name) {
			return false
		}
		if _, ok := idx.heads[headOf(typ, name, n)]; ok {
			return true
		}
	}
	return false
}

// Authorize applies Kafka's rules (see the package doc).
func (a *Authorizer) Authorize(_ context.Context, act auth.Action) bool {
	if _, super := a.superUsers[act.Principal]; super {
		return true
	}
	idx := a.idx.Load()
	t, name := act.Resource.Type, act.Resource.Name
	var v verdict
	v.add(idx.literal[resourceKey{t, name}], act)
	if name != auth.Wildcard {
		v.add(idx.wildcard[t], act)
	}
	if idx.mayHavePrefixes(t, name) {
		for _, n := range idx.prefixLens[t] {
			if n > len(name) {
				break
			}
			v.add(idx.prefixed[resourceKey{t, name[:n]}], act)
		}
	}
	switch {
	case v.denied:
		return false
	case v.allowed:
		return true
	}
	return !v.found && a.allowIfNoACL
}

// verdict accumulates what the bindings applying to a resource say.
type verdict struct {
	found, denied, allowed bool
}

func (v *verdict) add(entries []Entry, act auth.Action) {
	if len(entries) == 0 {
		return
	}
	v.found = true
	for i := range entries {
		e := &entries[i]
		if !principalMatches(e.Principal, act.Principal) || (e.Host != auth.Wildcard && e.Host != act.Host) {
			continue
		}
		if e.Permission == auth.Deny {
			v.denied = v.denied || e.Operation == act.Operation || e.Operation == auth.OpAll
		} else if allowImplies(e.Operation, act.Operation) {
			v.allowed = true
		}
	}
}

var wildcardPrincipal = auth.Principal{Type: auth.UserType, Name: auth.Wildcard}

func principalMatches(acl, p auth.Principal) bool { return acl == p || acl == wildcardPrincipal }

// allowImplies reports whether an ALLOW of granted allows op.
func allowImplies(granted, op auth.Operation) bool {
	if granted == op || granted == auth.OpAll {
		return true
	}
	switch op {
	case auth.OpDescribe:
		return granted == auth.OpRead || granted == auth.OpWrite || granted == auth.OpDelete || granted == auth.OpAlter
	case auth.OpDescribeConfigs:
		return granted == auth.OpAlterConfigs
	}
	return false
}

// IsSuperUser reports whether p is one of super.users.
func (a *Authorizer) IsSuperUser(p auth.Principal) bool {
	_, ok := a.superUsers[p]
	return ok
}

// Entries is what the snapshot holds for one pattern (nil: none).
func (a *Authorizer) Entries(p Pattern) []Entry {
	idx := a.idx.Load()
	return slices.Clone(idx.byPattern(p.PatternType)[resourceKey{p.Type, p.Name}])
}

// Bindings returns every binding f selects, in no particular order.
func (a *Authorizer) Bindings(f Filter) []Binding {
	idx := a.idx.Load()
	var out []Binding
	for pt, m := range map[auth.PatternType]map[resourceKey][]Entry{auth.PatternLiteral: idx.literal, auth.PatternPrefixed: idx.prefixed} {
		for k, entries := range m {
			p := Pattern{Type: k.typ, Name: k.name, PatternType: pt}
			if !f.matchesPattern(p) {
				continue
			}
			for _, e := range entries {
				if f.matchesEntry(e) {
					out = append(out, Binding{Pattern: p, Entry: e})
				}
			}
		}
	}
	return out
}

// Len is the number of bindings held.
func (a *Authorizer) Len() int { return a.idx.Load().count }

// SetPattern replaces the entries of one pattern (none: it has no
// bindings left).
func (a *Authorizer) SetPattern(p Pattern, entries []Entry) {
	a.SetPatterns(map[Pattern][]Entry{p: entries})
}

// SetPatterns replaces the entries of several patterns at once: one copy
// of the snapshot for all of them.
func (a *Authorizer) SetPatterns(updates map[Pattern][]Entry) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	old := a.idx.Load()
	next := &index{literal: old.literal, prefixed: old.prefixed, count: old.count}
	var literal, prefixed bool
	for p := range updates {
		if p.PatternType == auth.PatternPrefixed {
			prefixed = true
		} else {
			literal = true
		}
	}
	if literal {
		next.literal = maps.Clone(old.literal)
	}
	if prefixed {
		next.prefixed = maps.Clone(old.prefixed)
	}
	for p, entries := range updates {
		m := next.byPattern(p.PatternType)
		key := resourceKey{p.Type, p.Name}
		next.count += len(entries) - len(m[key])
		if len(entries) == 0 {
			delete(m, key)
		} else {
			m[key] = slices.Clone(entries)
		}
	}
	next.derive()
	a.idx.Store(next)
}

// Replace swaps every binding for bs (a store's reload).
func (a *Authorizer) Replace(bs []Binding) {
	next := newIndex()
	for _, b := range bs {
		m := next.byPattern(b.Pattern.PatternType)
		key := resourceKey{b.Pattern.Type, b.Pattern.Name}
		if !slices.Contains(m[key], b.Entry) {
			m[key] = append(m[key], b.Entry)
			next.count++
		}
	}
	next.derive()
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	a.idx.Store(next)
}

func (idx *index) byPattern(pt auth.PatternType) map[resourceKey][]Entry {
	if pt == auth.PatternPrefixed {
		return idx.prefixed
	}
	return idx.literal
}

// AllowsSomeResource reports whether p from host may do op on at least one
// resource of type typ, as Kafka's authorizeByResourceType (used by
// InitProducerId: an idempotent producer needs WRITE on some topic). Each
// pattern that allows it is tried with its own name as the resource: the
// literal name, or the bare prefix, which every deny covering the pattern
// also covers. It walks every binding of the type; only rare requests
// call it.
func (a *Authorizer) AllowsSomeResource(ctx context.Context, p auth.Principal, host string, op auth.Operation, typ auth.ResourceType) bool {
	if a.IsSuperUser(p) || a.allowIfNoACL {
		return true
	}
	idx := a.idx.Load()
	for _, m := range []map[resourceKey][]Entry{idx.literal, idx.prefixed} {
		for k, entries := range m {
			if k.typ != typ || !allowsFor(entries, p, host, op) {
				continue
			}
			if a.Authorize(ctx, auth.Action{Principal: p, Host: host, Operation: op, Resource: auth.Resource{Type: typ, Name: k.name}}) {
				return true
			}
		}
	}
	return false
}

func allowsFor(entries []Entry, p auth.Principal, host string, op auth.Operation) bool {
	for _, e := range entries {
		if e.Permission == auth.Allow && principalMatches(e.Principal, p) && (e.Host == auth.Wildcard || e.Host == host) &&
			allowImplies(e.Operation, op) {
			return true
		}
	}
	return false
}
