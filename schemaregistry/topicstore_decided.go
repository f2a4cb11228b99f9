package schemaregistry

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Decided records: the compactable format of the _schemas topic (doc.go,
// docs/replication.md). An intent record (topicstore.go) is decided by
// every node as it applies it, so it must stay in the log, in order,
// forever. A decided record instead states an outcome that one deciding
// writer has already reached, keyed by what it sets, as Confluent's
// primary writes them; applying it checks nothing against the records
// before it, so the latest record per key is the state and compaction
// may drop every record a later one replaced:
//
//   - {"keytype":"SCHEMA","subject":s,"version":v}: the row (s, v) with
//     its schema and deleted flag (a soft delete rewrites the row); a
//     tombstone (no value) is a purge of that row, and a schema no row
//     uses any more goes with it.
//   - {"keytype":"ID"}: {"highest":n}, every id up to n was handed out;
//     written with each purge so an id stays unused after compaction has
//     dropped the last row that held it.
//   - settings keep their {"setting":kind,"subject":s} records.
//
// The deciding writer produces these records with decide (pure: the
// state is not changed until the records are applied, by the same
// applyRecord every node runs), so the writer's answer and every node's
// state come from the same bytes.

const (
	keyTypeSchema = "SCHEMA"
	keyTypeID     = "ID"
)

// topicKey is any record key of the topic: an intent's writer, a
// setting, or a decided record's keytype.
type topicKey struct {
	recordKey
	KeyType string `json:"keytype,omitempty"`
	Version int    `json:"version,omitempty"`
}

// schemaRow is a SCHEMA record's value.
type schemaRow struct {
	StoredSchema
	Deleted bool `json:"deleted,omitempty"`
}

type idsValue struct {
	Highest int `json:"highest"`
}

// decidedRecord is one record a decision writes; a nil Value is a
// tombstone.
type decidedRecord struct {
	Key, Value []byte
}

func schemaKey(subject string, version int) []byte {
	k, _ := json.Marshal(topicKey{KeyType: keyTypeSchema, recordKey: recordKey{Subject: &subject}, Version: version})
	return k
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs of strings and ints are marshalled
	}
	return b
}

func (st *embeddedState) rowRecord(v Version) decidedRecord {
	sc := st.schemas[v.ID]
	sc.ID = v.ID
	return decidedRecord{Key: schemaKey(v.Subject, v.Version), Value: mustJSON(schemaRow{StoredSchema: sc, Deleted: v.Deleted})}
}

func (st *embeddedState) highestRecord() decidedRecord {
	return decidedRecord{Key: mustJSON(topicKey{KeyType: keyTypeID}), Value: mustJSON(idsValue{Highest: st.highestID})}
}

func settingRecord(e journalEntry) decidedRecord {
	subject := e.Subject
	return decidedRecord{Key: mustJSON(recordKey{Setting: e.Kind, Subject: &subject}), Value: mustJSON(recordValue{journalEntry: e})}
}

// decide is the deciding writer's step: the records that make e's outcome
// so, and that outcome (for an add the version stored, or why not: then
// nothing is written). st is unchanged; it must hold every record the
// topic has committed, which is what makes the one writer's decision the
// same as every node's replay of the intents would be.
func (st *embeddedState) decide(e journalEntry) ([]decidedRecord, Version, error) {
	switch e.Op {
	case "add":
		if e.Expect == nil || e.Schema == nil || e.Subject == "" {
			return nil, Version{}, fmt.Errorf("%w: an add needs expect, schema and subject", errMalformedEntry)
		}
		planned, err := st.planAdd(NewVersion{Subject: e.Subject, Schema: *e.Schema, ExpectLatest: *e.Expect,
			ID: e.ID, Version: e.Version})
		if err != nil {
			return nil, Version{}, err
		}
		sc := st.schemas[planned.ID]
		if planned.Schema != nil {
			sc = *planned.Schema
		}
		sc.ID = planned.ID
		rec := decidedRecord{Key: schemaKey(planned.Subject, planned.Version), Value: mustJSON(schemaRow{StoredSchema: sc})}
		return []decidedRecord{rec}, Version{Subject: planned.Subject, Version: planned.Version, ID: planned.ID,
			Created: planned.Schema != nil}, nil
	case "softdelete":
		var out []decidedRecord
		for _, v := range st.subjects[e.Subject] {
			if containsInt(e.Versions, v.Version) && !v.Deleted {
				v.Deleted = true
				out = append(out, st.rowRecord(v))
			}
		}
		return out, Version{}, nil
	case "purge":
		var out []decidedRecord
		for _, v := range st.subjects[e.Subject] {
			if containsInt(e.Versions, v.Version) {
				out = append(out, decidedRecord{Key: schemaKey(v.Subject, v.Version)})
			}
		}
		if len(out) > 0 {
			out = append(out, st.highestRecord())
		}
		return out, Version{}, nil
	case "set", "unset":
		return []decidedRecord{settingRecord(journalEntry{Op: e.Op, Kind: e.Kind, Subject: e.Subject, Value: e.Value})}, Version{}, nil
	}
	return nil, Version{}, fmt.Errorf("%w: op %q", errMalformedEntry, e.Op)
}

// decidedSnapshot is the whole state as decided records: what the first
// deciding writer on a topic holding intents writes (with tombstones for
// the intents' keys, intentTombstones) so that compaction can drop them.
func (st *embeddedState) decidedSnapshot() []decidedRecord {
	var out []decidedRecord
	subjects := make([]string, 0, len(st.subjects))
	for s := range st.subjects {
		subjects = append(subjects, s)
	}
	sort.Strings(subjects)
	for _, s := range subjects {
		for _, v := range st.subjects[s] {
			out = append(out, st.rowRecord(v))
		}
	}
	keys := make([]string, 0, len(st.settings))
	for k := range st.settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var kind, subject string
		for i := 0; i < len(k); i++ {
			if k[i] == 0 {
				kind, subject = k[:i], k[i+1:]
				break
			}
		}
		out = append(out, settingRecord(journalEntry{Op: "set", Kind: SettingKind(kind), Subject: subject, Value: st.settings[k]}))
	}
	return append(out, st.highestRecord())
}

// appliedRecord is what applying one record did: an intent's outcome and
// writer, and the subject watchers hear of ("" when ids may be gone).
type appliedRecord struct {
	version Version
	subject string
	writer  string
	seq     uint64
}

// applyRecord applies one record of the topic, whichever format: a
// decided record as stated, an intent decided here (applyIntent), a
// tombstone of an intent (written when a topic converts) as nothing.
func (st *embeddedState) applyRecord(key, value []byte) (appliedRecord, error) {
	var k topicKey
	if len(key) > 0 {
		if err := json.Unmarshal(key, &k); err != nil {
			return appliedRecord{}, fmt.Errorf("%w: key: %v", errMalformedEntry, err)
		}
	}
	if k.KeyType != "" {
		a := appliedRecord{}
		if k.KeyType == keyTypeSchema && value != nil && k.Subject != nil {
			a.subject = *k.Subject
		}
		return a, st.applyDecided(k, value)
	}
	if value == nil {
		return appliedRecord{}, nil // an intent's or a setting's tombstone
	}
	var v recordValue
	if err := json.Unmarshal(value, &v); err != nil {
		return appliedRecord{}, fmt.Errorf("%w: %v", ErrCorruptJournal, err)
	}
	a := appliedRecord{subject: changedSubject(v.journalEntry), writer: v.Writer, seq: v.Seq}
	if k.Writer != "" {
		a.writer, a.seq = k.Writer, k.Seq
	}
	var err error
	a.version, err = st.applyIntent(v.journalEntry)
	return a, err
}

func (st *embeddedState) applyDecided(k topicKey, value []byte) error {
	switch k.KeyType {
	case keyTypeID:
		if value == nil {
			return nil
		}
		var v idsValue
		if err := json.Unmarshal(value, &v); err != nil || v.Highest < 0 {
			return fmt.Errorf("%w: id record %q", errMalformedEntry, value)
		}
		st.highestID = max(st.highestID, v.Highest)
		return nil
	case keyTypeSchema:
		if k.Subject == nil || *k.Subject == "" || k.Version <= 0 {
			return fmt.Errorf("%w: schema key without subject or version", errMalformedEntry)
		}
		subject := *k.Subject
		if value == nil {
			st.purge(subject, []int{k.Version})
			return nil
		}
		var row schemaRow
		if err := json.Unmarshal(value, &row); err != nil {
			return fmt.Errorf("%w: schema row: %v", errMalformedEntry, err)
		}
		if row.ID <= 0 || row.Fingerprint == "" {
			return fmt.Errorf("%w: schema row without id or fingerprint", errMalformedEntry)
		}
		if id, known := st.byFP[row.Fingerprint]; known && id != row.ID {
			return fmt.Errorf("%w: fingerprint of id %d stated for id %d", errMalformedEntry, id, row.ID)
		}
		st.putRow(Version{Subject: subject, Version: k.Version, ID: row.ID, Deleted: row.Deleted}, row.StoredSchema)
		return nil
	}
	return fmt.Errorf("%w: keytype %q", errMalformedEntry, k.KeyType)
}

// putRow sets the row (subject, version) and its schema, replacing the
// row if it is there.
func (st *embeddedState) putRow(v Version, sc StoredSchema) {
	if old, ok := st.schemas[sc.ID]; ok && old.Fingerprint != sc.Fingerprint {
		delete(st.byFP, old.Fingerprint)
	}
	st.schemas[sc.ID] = sc
	st.byFP[sc.Fingerprint] = sc.ID
	st.highestID = max(st.highestID, sc.ID)
	vs := st.subjects[v.Subject]
	i := sort.Search(len(vs), func(i int) bool { return vs[i].Version >= v.Version })
	if i < len(vs) && vs[i].Version == v.Version {
		replaced := vs[i].ID
		vs[i] = v
		if replaced != v.ID {
			st.dropUnused()
		}
		return
	}
	vs = append(vs, Version{})
	copy(vs[i+1:], vs[i:])
	vs[i] = v
	st.subjects[v.Subject] = vs
}
