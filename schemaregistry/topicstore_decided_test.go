package schemaregistry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// randomIntents is a scripted workload of writes as registries on several
// nodes would make them: adds checked against a view that is sometimes
// stale, imports (some clashing), soft deletes, purges, setting changes.
func randomIntents(r *rand.Rand, n int, view *embeddedState) []journalEntry {
	var out []journalEntry
	for range n {
		subject := fmt.Sprintf("s%d", r.IntN(5))
		latest := 0
		if vs := view.subjects[subject]; len(vs) > 0 {
			latest = vs[len(vs)-1].Version
		}
		var e journalEntry
		switch x := r.IntN(20); {
		case x < 11:
			expect := latest
			if r.IntN(6) == 0 {
				expect = max(0, latest-1) // a stale view: refused
			}
			fp := fmt.Sprintf("fp%d", r.IntN(25))
			e = journalEntry{Op: "add", Subject: subject, Expect: &expect,
				Schema: &StoredSchema{Type: "AVRO", Text: `"` + fp + `"`, Fingerprint: fp}}
			if r.IntN(8) == 0 {
				e.ID = 100 + r.IntN(10) // an import, maybe of an id in use
			}
		case x < 14:
			e = journalEntry{Op: "softdelete", Subject: subject, Versions: []int{1 + r.IntN(max(latest, 1))}}
		case x < 16:
			e = journalEntry{Op: "purge", Subject: subject, Versions: []int{1 + r.IntN(max(latest, 1)), latest}}
		case x < 19:
			e = journalEntry{Op: "set", Kind: SettingCompatibility, Subject: subject, Value: []string{"NONE", "FULL"}[r.IntN(2)]}
		default:
			e = journalEntry{Op: "unset", Kind: SettingMode, Subject: subject}
		}
		out = append(out, e)
		view.applyIntent(e)
	}
	return out
}

// compacted is what Kafka's cleaner leaves of a log: the latest record
// of each key, in offset order; with dropTombstones, also past
// delete.retention.ms.
func compacted(log []decidedRecord, dropTombstones bool) []decidedRecord {
	latest := map[string]int{}
	for i, rec := range log {
		latest[string(rec.Key)] = i
	}
	var out []decidedRecord
	for i, rec := range log {
		if latest[string(rec.Key)] == i && (rec.Value != nil || !dropTombstones) {
			out = append(out, rec)
		}
	}
	return out
}

func replay(t *testing.T, log []decidedRecord) embeddedState {
	t.Helper()
	st := newEmbeddedState()
	for i, rec := range log {
		if _, err := st.applyRecord(rec.Key, rec.Value); err != nil && !isRefusal(err) {
			t.Fatalf("record %d (%s): %v", i, rec.Key, err)
		}
	}
	return st
}

// TestDecidedRecordsMatchIntentsAndSurviveCompaction: one decider writing
// decided records for a workload reaches, on every node, the state the
// intents reach when every node decides them; the compacted log rebuilds
// it (with or without the tombstones), keeps about one record per live
// version and setting, and a decision on the rebuilt state hands out an
// id above every one handed out before.
func TestDecidedRecordsMatchIntentsAndSurviveCompaction(t *testing.T) {
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 7))
		view := newEmbeddedState()
		intents := randomIntents(r, 400, &view)

		byIntents := newEmbeddedState()
		decider := newEmbeddedState()
		var log []decidedRecord
		for i, e := range intents {
			wantV, wantErr := byIntents.applyIntent(e)
			recs, gotV, gotErr := decider.decide(e)
			if !errors.Is(gotErr, wantErr) && !(gotErr == nil && wantErr == nil) {
				t.Fatalf("seed %d intent %d %+v: decided %v, intents %v", seed, i, e, gotErr, wantErr)
			}
			gotV.Created = false
			if gotV != wantV {
				t.Fatalf("seed %d intent %d: decided %+v, intents %+v", seed, i, gotV, wantV)
			}
			if gotErr != nil && len(recs) > 0 {
				t.Fatalf("seed %d intent %d: a refusal wrote %d records", seed, i, len(recs))
			}
			for _, rec := range recs {
				if _, err := decider.applyRecord(rec.Key, rec.Value); err != nil {
					t.Fatalf("seed %d: applying a decision: %v", seed, err)
				}
			}
			log = append(log, recs...)
		}
		if !reflect.DeepEqual(decider, byIntents) {
			t.Fatalf("seed %d: decided state\n%+v\nintent state\n%+v", seed, decider, byIntents)
		}
		for _, drop := range []bool{false, true} {
			small := compacted(log, drop)
			if got := replay(t, small); !reflect.DeepEqual(got, byIntents) {
				t.Fatalf("seed %d drop tombstones %v: compacted replay\n%+v\nwant\n%+v", seed, drop, got, byIntents)
			}
			if drop {
				rows := 0
				for _, vs := range byIntents.subjects {
					rows += len(vs)
				}
				if limit := rows + 2*5 + 1; len(small) > limit {
					t.Fatalf("seed %d: %d records after compaction for %d rows (at most %d)", seed, len(small), rows, limit)
				}
				if seed == 0 {
					t.Logf("%d intents, %d decided records, %d after compaction, %d rows", len(intents), len(log), len(small), rows)
				}
				rebuilt := replay(t, small)
				expect := 0
				if vs := rebuilt.subjects["fresh"]; len(vs) > 0 {
					expect = vs[len(vs)-1].Version
				}
				_, v, err := rebuilt.decide(journalEntry{Op: "add", Subject: "fresh", Expect: &expect,
					Schema: &StoredSchema{Type: "AVRO", Text: `"new"`, Fingerprint: "never-seen"}})
				if err != nil || v.ID <= byIntents.highestID {
					t.Fatalf("seed %d: a new schema after compaction got id %d (%v), highest handed out %d", seed, v.ID, err, byIntents.highestID)
				}
			}
		}
	}
}

// TestDecidedSnapshotConvertsIntentTopic: a topic of intents converts by
// one decided snapshot plus tombstones of the intents' keys; replaying
// the whole log, or what compaction leaves of it, gives the same state.
func TestDecidedSnapshotConvertsIntentTopic(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	view := newEmbeddedState()
	var log []decidedRecord
	for i, e := range randomIntents(r, 300, &view) {
		key := mustJSON(recordKey{Writer: "0011223344556677", Seq: uint64(i + 1)})
		log = append(log, decidedRecord{Key: key, Value: mustJSON(recordValue{journalEntry: e})})
	}
	old := replay(t, log)
	if !reflect.DeepEqual(old, view) {
		t.Fatal("the intents replayed differ from the workload's own view")
	}
	n := len(log)
	log = append(log, old.decidedSnapshot()...)
	for _, rec := range log[:n] {
		log = append(log, decidedRecord{Key: rec.Key})
	}
	for _, small := range [][]decidedRecord{log, compacted(log, false), compacted(log, true)} {
		if got := replay(t, small); !reflect.DeepEqual(got, old) {
			t.Fatalf("%d records replayed:\n%+v\nwant\n%+v", len(small), got, old)
		}
	}
	if small := compacted(log, true); len(small) >= n/2 {
		t.Fatalf("%d intents left %d records after conversion and compaction", n, len(small))
	}
}

// TestDecidedRecordErrors: malformed decided records are refused with
// errMalformedEntry and change nothing.
func TestDecidedRecordErrors(t *testing.T) {
	st := newEmbeddedState()
	good := schemaRow{StoredSchema: StoredSchema{ID: 3, Type: "AVRO", Text: `"x"`, Fingerprint: "fx"}}
	if _, err := st.applyRecord(schemaKey("a", 1), mustJSON(good)); err != nil {
		t.Fatal(err)
	}
	before := fmt.Sprintf("%+v", st)
	for name, rec := range map[string]decidedRecord{
		"no version":       {Key: []byte(`{"keytype":"SCHEMA","subject":"a"}`), Value: mustJSON(good)},
		"no subject":       {Key: []byte(`{"keytype":"SCHEMA","version":2}`), Value: mustJSON(good)},
		"negative version": {Key: []byte(`{"keytype":"SCHEMA","subject":"a","version":-1}`)},
		"no id":            {Key: schemaKey("a", 2), Value: []byte(`{"fingerprint":"fy"}`)},
		"no fingerprint":   {Key: schemaKey("a", 2), Value: []byte(`{"id":4}`)},
		"fingerprint of another id": {Key: schemaKey("b", 1),
			Value: mustJSON(schemaRow{StoredSchema: StoredSchema{ID: 9, Fingerprint: "fx"}})},
		"bad row":       {Key: schemaKey("a", 2), Value: []byte(`[1]`)},
		"bad key":       {Key: []byte(`{"keytype":`), Value: mustJSON(good)},
		"unknown type":  {Key: []byte(`{"keytype":"OFFSET"}`), Value: []byte(`{}`)},
		"negative high": {Key: []byte(`{"keytype":"ID"}`), Value: []byte(`{"highest":-5}`)},
	} {
		if _, err := st.applyRecord(rec.Key, rec.Value); !errors.Is(err, errMalformedEntry) {
			t.Errorf("%s: %v, want errMalformedEntry", name, err)
		}
		if after := fmt.Sprintf("%+v", st); after != before {
			t.Fatalf("%s changed the state:\n%s\n%s", name, after, before)
		}
	}
}

// FuzzApplyRecord: any key and value, decided or intent format, is
// applied or refused without a panic, and leaves the indexes consistent.
func FuzzApplyRecord(f *testing.F) {
	f.Add(schemaKey("a", 1), mustJSON(schemaRow{StoredSchema: StoredSchema{ID: 1, Fingerprint: "f"}}))
	f.Add([]byte(`{"keytype":"ID"}`), []byte(`{"highest":7}`))
	f.Add([]byte(`{"writer":"w","seq":1}`), []byte(`{"op":"add","subject":"a","expect":0,"schema":{"fingerprint":"f"}}`))
	f.Add([]byte(`{"setting":"mode","subject":""}`), []byte(`{"op":"set","kind":"mode","value":"READONLY"}`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		st := newEmbeddedState()
		st.applyRecord(schemaKey("a", 1), mustJSON(schemaRow{StoredSchema: StoredSchema{ID: 1, Fingerprint: "f"}}))
		st.applyRecord(key, value)
		st.applyRecord(key, nil)
		for fp, id := range st.byFP {
			if st.schemas[id].Fingerprint != fp {
				t.Fatalf("fingerprint %q names id %d holding %q", fp, id, st.schemas[id].Fingerprint)
			}
		}
	})
}
