package schemaregistry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/ferry-mq/ferry/storage"
)

// Compaction: the journal only grows, so on open, when it holds more than
// twice the lines a fresh one would (plus some slack), it is rewritten
// from the in-memory state: written to journal.jsonl.tmp, fsynced, renamed
// over the journal, and the directory fsynced. A crash at any point leaves
// either the old or the new journal whole.

const compactSlack = 1000

// snapshot is the shortest journal that rebuilds st.
func (st *embeddedState) snapshot() []journalEntry {
	var out []journalEntry
	written := map[int]bool{}
	subjects := make([]string, 0, len(st.subjects))
	for s := range st.subjects {
		subjects = append(subjects, s)
	}
	sort.Strings(subjects)
	for _, subject := range subjects {
		var deleted []int
		for _, v := range st.subjects[subject] {
			e := journalEntry{Op: "add", Subject: subject, Version: v.Version, ID: v.ID}
			if !written[v.ID] {
				sc := st.schemas[v.ID]
				e.Schema, written[v.ID] = &sc, true
			}
			out = append(out, e)
			if v.Deleted {
				deleted = append(deleted, v.Version)
			}
		}
		if deleted != nil {
			out = append(out, journalEntry{Op: "softdelete", Subject: subject, Versions: deleted})
		}
	}
	keys := make([]string, 0, len(st.settings))
	for k := range st.settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kind, subject := splitSettingKey(k)
		out = append(out, journalEntry{Op: "set", Kind: kind, Subject: subject, Value: st.settings[k]})
	}
	return append(out, journalEntry{Op: "highest", ID: st.highestID})
}

func splitSettingKey(k string) (SettingKind, string) {
	for i := 0; i < len(k); i++ {
		if k[i] == 0 {
			return SettingKind(k[:i]), k[i+1:]
		}
	}
	return SettingKind(k), ""
}

// compactIfWorthIt rewrites the journal when lines is well above what the
// state needs; it returns the open file and size to use from then on.
func (s *EmbeddedStore) compactIfWorthIt(f *os.File, size int64, lines int) (*os.File, int64, error) {
	snap := s.state.snapshot()
	if lines <= 2*len(snap)+compactSlack {
		return f, size, nil
	}
	// Until the rename, a failure leaves the old journal in use: the
	// next open tries again.
	var buf bytes.Buffer
	for _, e := range snap {
		line, _ := json.Marshal(e)
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if err := storage.WriteFileAtomic(storage.OSFS{}, s.path, buf.Bytes(), 0o644, storage.Durable); err != nil {
		return f, size, nil
	}
	n := int64(buf.Len())
	f.Close()
	nf, err := os.OpenFile(s.path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("reopen compacted schema journal: %w", err)
	}
	return nf, n, nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
