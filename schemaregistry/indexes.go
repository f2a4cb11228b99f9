package schemaregistry

import (
	"context"
	"sort"
	"sync"
)

// indexes is the in-memory state the embedded journal and the topic store
// both rebuild from their entries and serve every read from. mu guards
// state; it is never held during I/O.
type indexes struct {
	mu    sync.RWMutex
	state embeddedState
}

// embeddedState is the registry as rows: what every entry applies to.
type embeddedState struct {
	schemas   map[int]StoredSchema
	byFP      map[string]int
	subjects  map[string][]Version // sorted by version
	settings  map[string]string    // kind + "\x00" + subject
	highestID int                  // ids are never reused, even after a purge
}

func newEmbeddedState() embeddedState {
	return embeddedState{schemas: map[int]StoredSchema{}, byFP: map[string]int{},
		subjects: map[string][]Version{}, settings: map[string]string{}}
}

// planAdd is AddVersion's check against st: the entry that stores w, or
// why it cannot be stored (ErrStoreConflict, ErrVersionInUse, ErrIDInUse).
func (st *embeddedState) planAdd(w NewVersion) (journalEntry, error) {
	vs := st.subjects[w.Subject]
	latest := 0
	if len(vs) > 0 {
		latest = vs[len(vs)-1].Version
	}
	if latest != w.ExpectLatest {
		return journalEntry{}, ErrStoreConflict
	}
	e := journalEntry{Op: "add", Subject: w.Subject, Version: w.Version}
	if e.Version == 0 {
		e.Version = latest + 1
	}
	for _, v := range vs {
		if v.Version == e.Version {
			return e, ErrVersionInUse
		}
	}
	id, known := st.byFP[w.Schema.Fingerprint]
	switch {
	case known && w.ID != 0 && w.ID != id:
		return e, ErrIDInUse
	case known:
		e.ID = id
		return e, nil
	case w.ID != 0:
		if _, taken := st.schemas[w.ID]; taken {
			return e, ErrIDInUse
		}
		e.ID = w.ID
	default:
		e.ID = st.highestID + 1
	}
	sc := w.Schema
	sc.ID = e.ID
	e.Schema = &sc
	return e, nil
}

func (st *embeddedState) apply(e journalEntry) {
	switch e.Op {
	case "add":
		if e.Schema != nil {
			st.schemas[e.Schema.ID] = *e.Schema
			st.byFP[e.Schema.Fingerprint] = e.Schema.ID
			st.highestID = max(st.highestID, e.Schema.ID)
		}
		vs := append(st.subjects[e.Subject], Version{Subject: e.Subject, Version: e.Version, ID: e.ID})
		sort.Slice(vs, func(i, j int) bool { return vs[i].Version < vs[j].Version })
		st.subjects[e.Subject] = vs
	case "softdelete":
		for i, v := range st.subjects[e.Subject] {
			if containsInt(e.Versions, v.Version) {
				st.subjects[e.Subject][i].Deleted = true
			}
		}
	case "purge":
		st.purge(e.Subject, e.Versions)
	case "set":
		st.settings[string(e.Kind)+"\x00"+e.Subject] = e.Value
	case "unset":
		delete(st.settings, string(e.Kind)+"\x00"+e.Subject)
	case "highest": // written by compaction: ids up to here were handed out
		st.highestID = max(st.highestID, e.ID)
	}
}

func (st *embeddedState) purge(subject string, versions []int) {
	var kept []Version
	for _, v := range st.subjects[subject] {
		if !containsInt(versions, v.Version) {
			kept = append(kept, v)
		}
	}
	if len(kept) == 0 {
		delete(st.subjects, subject)
	} else {
		st.subjects[subject] = kept
	}
	st.dropUnused()
}

// dropUnused removes the schemas no version row uses any more; their ids
// stay handed out (highestID).
func (st *embeddedState) dropUnused() {
	used := map[int]bool{}
	for _, vs := range st.subjects {
		for _, v := range vs {
			used[v.ID] = true
		}
	}
	for id, sc := range st.schemas {
		if !used[id] {
			delete(st.schemas, id)
			delete(st.byFP, sc.Fingerprint)
		}
	}
}

func containsInt(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

// Schema implements Store.
func (s *indexes) Schema(_ context.Context, id int) (StoredSchema, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sc, ok := s.state.schemas[id]
	if !ok {
		return StoredSchema{}, ErrStoreNotFound
	}
	return sc, nil
}

// SchemaID implements Store.
func (s *indexes) SchemaID(_ context.Context, fp string) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, ok := s.state.byFP[fp]
	if !ok {
		return 0, ErrStoreNotFound
	}
	return id, nil
}

// Subjects implements Store.
func (s *indexes) Subjects(context.Context) ([]SubjectInfo, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]SubjectInfo, 0, len(s.state.subjects))
	for name, vs := range s.state.subjects {
		out = append(out, SubjectInfo{Name: name, Live: len(live(vs))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Versions implements Store.
func (s *indexes) Versions(_ context.Context, subject string) ([]Version, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]Version(nil), s.state.subjects[subject]...), nil
}

// VersionsOf implements Store.
func (s *indexes) VersionsOf(_ context.Context, id int) ([]Version, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Version
	for _, vs := range s.state.subjects {
		for _, v := range vs {
			if v.ID == id {
				out = append(out, v)
			}
		}
	}
	sortVersions(out)
	return out, nil
}

func sortVersions(vs []Version) {
	sort.Slice(vs, func(i, j int) bool {
		if vs[i].Subject != vs[j].Subject {
			return vs[i].Subject < vs[j].Subject
		}
		return vs[i].Version < vs[j].Version
	})
}

// ReferencedBy implements Store: ids of schemas with a live version that
// reference subject/version.
func (s *indexes) ReferencedBy(_ context.Context, subject string, version int) ([]int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	liveIDs := map[int]bool{}
	for _, vs := range s.state.subjects {
		for _, v := range vs {
			liveIDs[v.ID] = liveIDs[v.ID] || !v.Deleted
		}
	}
	var out []int
	for id, sc := range s.state.schemas {
		for _, ref := range sc.References {
			if ref.Subject == subject && ref.Version == version && liveIDs[id] {
				out = append(out, id)
				break
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// Setting implements Store.
func (s *indexes) Setting(_ context.Context, kind SettingKind, subject string) (string, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.state.settings[string(kind)+"\x00"+subject]
	return v, ok, nil
}
