package schemaregistry

// unionIndex finds a union's branches by kind and name in constant time,
// so resolving every branch of one union against another stays linear.
// Each map holds the first branch index with that key.
type unionIndex struct {
	byKind  map[Kind]int   // unnamed branches
	byShort map[string]int // named: kind and unqualified name
	byFull  map[string]int // named: kind and full name
	byAlias map[string]int // named: kind and one of its aliases
}

func namedKey(k Kind, name string) string { return k.String() + " " + name }

func indexUnion(u *Type) {
	ix := &unionIndex{byKind: map[Kind]int{}, byShort: map[string]int{}, byFull: map[string]int{}, byAlias: map[string]int{}}
	first := func(m map[string]int, key string, i int) {
		if _, ok := m[key]; !ok {
			m[key] = i
		}
	}
	for i, b := range u.Branches {
		if !b.named() {
			if _, ok := ix.byKind[b.Kind]; !ok {
				ix.byKind[b.Kind] = i
			}
			continue
		}
		first(ix.byShort, namedKey(b.Kind, shortName(b.Name)), i)
		first(ix.byFull, namedKey(b.Kind, b.Name), i)
		for _, a := range b.Aliases {
			first(ix.byAlias, namedKey(b.Kind, a), i)
		}
	}
	u.unionIndex = ix
}

// lowest is the smallest index among those found (-1 when none is).
func lowest(m map[string]int, keys []string, best int) int {
	for _, k := range keys {
		if i, ok := m[k]; ok && (best < 0 || i < best) {
			best = i
		}
	}
	return best
}

// readerBranch is the first branch of reader union u of w's kind (for a
// named type, one nameMatches pairs with w), -1 when there is none.
func readerBranch(u, w *Type) int {
	ix := u.unionIndex
	if ix == nil {
		for i, rb := range u.Branches {
			if rb.Kind == w.Kind && (!w.named() || nameMatches(rb, w)) {
				return i
			}
		}
		return -1
	}
	if !w.named() {
		if i, ok := ix.byKind[w.Kind]; ok {
			return i
		}
		return -1
	}
	best := lowest(ix.byShort, []string{namedKey(w.Kind, shortName(w.Name))}, -1)
	return lowest(ix.byAlias, []string{namedKey(w.Kind, w.Name)}, best)
}

// promotedBranch is the first branch of u that w's kind promotes to.
func promotedBranch(u, w *Type) int {
	if u.unionIndex == nil {
		for i, rb := range u.Branches {
			if promotable(w.Kind, rb.Kind) {
				return i
			}
		}
		return -1
	}
	best := -1
	for k, i := range u.unionIndex.byKind { // promotions are between unnamed kinds
		if promotable(w.Kind, k) && (best < 0 || i < best) {
			best = i
		}
	}
	return best
}

// pairedBranch is the first branch of u that Diff pairs with b: the same
// kind and, for named types, a name match in either direction.
func pairedBranch(u, b *Type) int {
	if u.unionIndex == nil || !b.named() {
		if u.unionIndex != nil {
			if i, ok := u.unionIndex.byKind[b.Kind]; ok {
				return i
			}
			return -1
		}
		for i, x := range u.Branches {
			if x.Kind == b.Kind && (!b.named() || nameMatches(x, b) || nameMatches(b, x)) {
				return i
			}
		}
		return -1
	}
	ix := u.unionIndex
	best := lowest(ix.byShort, []string{namedKey(b.Kind, shortName(b.Name))}, -1)
	best = lowest(ix.byAlias, []string{namedKey(b.Kind, b.Name)}, best)
	keys := make([]string, len(b.Aliases))
	for i, a := range b.Aliases {
		keys[i] = namedKey(b.Kind, a)
	}
	return lowest(ix.byFull, keys, best)
}
