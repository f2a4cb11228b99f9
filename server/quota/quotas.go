package quota

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Quotas are one entity's quota values by key.
type Quotas map[string]float64

// Component is one (type, name) of an entity in a request; a nil name is
// the default.
type Component struct {
	Type string
	Name *string
}

// EntityOf builds an entity from a request's components, refusing what
// Kafka refuses: unknown or repeated types, none at all, an ip with a user
// or a client id, an ip name that is not an IP address. An ip's name is
// made canonical (canonicalIP).
func EntityOf(cs []Component) (Entity, error) {
	var e Entity
	for _, c := range cs {
		n := DefaultComponent
		if c.Name != nil {
			n = Named(*c.Name)
		}
		var slot *Name
		switch c.Type {
		case TypeUser:
			slot = &e.User
		case TypeClientID:
			slot = &e.Client
		case TypeIP:
			slot = &e.IP
			if !n.Default {
				ip, err := canonicalIP(n.Value)
				if err != nil {
					return Entity{}, err
				}
				n.Value = ip
			}
		default:
			return Entity{}, fmt.Errorf("%w: unknown entity type %q", ErrInvalidEntity, truncate(c.Type))
		}
		if slot.Set {
			return Entity{}, fmt.Errorf("%w: entity type %q given twice", ErrInvalidEntity, c.Type)
		}
		*slot = n
	}
	return e, e.Validate()
}

// Components is the entity as a response lists it (user first).
func (e Entity) Components() []Component {
	var out []Component
	add := func(t string, n Name) {
		if !n.Set {
			return
		}
		c := Component{Type: t}
		if !n.Default {
			v := n.Value
			c.Name = &v
		}
		out = append(out, c)
	}
	add(TypeUser, e.User)
	add(TypeClientID, e.Client)
	add(TypeIP, e.IP)
	return out
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Op is one change of an entity's quotas: set Key to Value, or remove it.
type Op struct {
	Key    string
	Value  float64
	Remove bool
}

// Apply returns e's current quotas changed by ops, all or none: every key
// must be a quota type of e's kind, every set value valid, no key changed
// twice.
func Apply(e Entity, current Quotas, ops []Op) (Quotas, error) {
	next := maps.Clone(current)
	if next == nil {
		next = Quotas{}
	}
	seen := map[string]bool{}
	for _, op := range ops {
		if !e.KeyFor(op.Key) {
			return nil, fmt.Errorf("%w: quota key %q is not one of %s's (%s)", ErrInvalidQuota,
				truncate(op.Key), e.kind(), e.keysFor())
		}
		if seen[op.Key] {
			return nil, fmt.Errorf("%w: %s changed twice in one request", ErrInvalidQuota, op.Key)
		}
		seen[op.Key] = true
		if op.Remove {
			delete(next, op.Key)
			continue
		}
		if err := CheckValue(op.Key, op.Value); err != nil {
			return nil, err
		}
		next[op.Key] = op.Value
	}
	return next, nil
}

// Match is how a DescribeClientQuotas filter component matches.
type Match int8

// Kafka's match types.
const (
	MatchExact   Match = 0 // the component has this name
	MatchDefault Match = 1 // the component is the default
	MatchAny     Match = 2 // the entity has the component, whatever its name
)

// FilterComponent is one component of a DescribeClientQuotas filter.
type FilterComponent struct {
	Type  string
	Match Match
	Name  string // for MatchExact
}

// Filter selects entities: each component must match; strict: the
// entity has no other components.
type Filter struct {
	Components []FilterComponent
	Strict     bool
}

// Validate refuses what Kafka refuses: unknown or repeated types, unknown
// match types, ip with user or client-id, an exact ip that is not an IP
// address. It makes an exact ip canonical, as entities' are.
func (f Filter) Validate() error {
	seen := map[string]bool{}
	for i, c := range f.Components {
		switch c.Type {
		case TypeUser, TypeClientID:
		case TypeIP:
			if c.Match == MatchExact {
				ip, err := canonicalIP(c.Name)
				if err != nil {
					return err
				}
				f.Components[i].Name = ip
			}
		default:
			return fmt.Errorf("%w: unknown entity type %q", ErrInvalidEntity, truncate(c.Type))
		}
		if seen[c.Type] {
			return fmt.Errorf("%w: entity type %q filtered twice", ErrInvalidEntity, c.Type)
		}
		seen[c.Type] = true
		if c.Match < MatchExact || c.Match > MatchAny {
			return fmt.Errorf("%w: unknown match type %d", ErrInvalidEntity, c.Match)
		}
	}
	if seen[TypeIP] && (seen[TypeUser] || seen[TypeClientID]) {
		return fmt.Errorf("%w: an ip filter cannot be combined with a user or client-id filter", ErrInvalidEntity)
	}
	return nil
}

// Matches reports whether the filter selects e.
func (f Filter) Matches(e Entity) bool {
	want := 0
	for _, c := range f.Components {
		n := e.User
		switch c.Type {
		case TypeClientID:
			n = e.Client
		case TypeIP:
			n = e.IP
		}
		if !n.Set {
			return false
		}
		want++
		switch c.Match {
		case MatchExact:
			if n.Default || n.Value != c.Name {
				return false
			}
		case MatchDefault:
			if !n.Default {
				return false
			}
		}
	}
	have := 0
	for _, n := range []Name{e.User, e.Client, e.IP} {
		if n.Set {
			have++
		}
	}
	return !f.Strict || have == want
}

// Table is every entity's quotas.
type Table map[Entity]Quotas

// Select lists the entities f selects with their quotas, in path order.
func (t Table) Select(f Filter) []Entry {
	var out []Entry
	for e, q := range t {
		if len(q) > 0 && f.Matches(e) {
			out = append(out, Entry{Entity: e, Quotas: maps.Clone(q)})
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Entity.Path(), b.Entity.Path()) })
	return out
}

// Entry is one entity and its quotas.
type Entry struct {
	Entity Entity
	Quotas Quotas
}

// Resolve is the quota of key that holds a request by user with client
// id client, and the entity whose rate it counts against (the matching
// entity, defaults replaced by the request's names); ok false: no quota.
func (t Table) Resolve(key, user, client string) (limit float64, bucket Entity, ok bool) {
	u, c, du, dc := Named(user), Named(client), DefaultComponent, DefaultComponent
	none := Name{}
	uc := func(u, c Name) Entity { return Entity{User: u, Client: c} }
	order := [...]struct{ match, count Entity }{
		{uc(u, c), uc(u, c)},
		{uc(u, dc), uc(u, c)},
		{uc(u, none), uc(u, none)},
		{uc(du, c), uc(u, c)},
		{uc(du, dc), uc(u, c)},
		{uc(du, none), uc(u, none)},
		{uc(none, c), uc(none, c)},
		{uc(none, dc), uc(none, c)},
	}
	for _, o := range order {
		if v, found := t[o.match][key]; found {
			return v, o.count, true
		}
	}
	return 0, Entity{}, false
}
