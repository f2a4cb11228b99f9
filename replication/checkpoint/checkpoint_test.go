package checkpoint

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/errorfs"
)

func TestEpochsRoundTrip(t *testing.T) {
	for _, entries := range [][]EpochEntry{
		{},
		{{0, 0}},
		{{0, 0}, {3, 1500}, {2147483647, 9223372036854775807}},
	} {
		b := EncodeEpochs(entries)
		got, err := DecodeEpochs(b)
		if err != nil {
			t.Fatalf("decode %q: %v", b, err)
		}
		if len(got) != len(entries) {
			t.Fatalf("decode %q: %v, want %v", b, got, entries)
		}
		for i := range got {
			if got[i] != entries[i] {
				t.Fatalf("decode %q: %v, want %v", b, got, entries)
			}
		}
	}
}

// The bytes are Kafka's: a reader of Kafka's files reads ferry's.
func TestEncodeIsKafkaFormat(t *testing.T) {
	if got, want := string(EncodeEpochs([]EpochEntry{{0, 0}, {3, 1500}})), "0\n2\n0 0\n3 1500\n"; got != want {
		t.Fatalf("epochs: %q, want %q", got, want)
	}
	b, err := EncodeOffsets([]OffsetEntry{{"orders", 0, 42}, {"__consumer_offsets", 17, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "0\n2\norders 0 42\n__consumer_offsets 17 0\n"; string(b) != want {
		t.Fatalf("offsets: %q, want %q", b, want)
	}
}

func TestOffsetsRoundTrip(t *testing.T) {
	entries := []OffsetEntry{{"a", 0, 0}, {"a", 1, 10}, {"b.c_d-e", 2147483647, 9223372036854775807}}
	b, err := EncodeOffsets(entries)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeOffsets(b)
	if err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	if len(got) != len(entries) {
		t.Fatalf("got %v, want %v", got, entries)
	}
	for i := range got {
		if got[i] != entries[i] {
			t.Fatalf("got %v, want %v", got, entries)
		}
	}
}

func TestEncodeOffsetsRefusesUnreadableTopic(t *testing.T) {
	for _, topic := range []string{"", "two words", "tab\tbed", "new\nline", ".", "..", strings.Repeat("x", 250), "ünï"} {
		if _, err := EncodeOffsets([]OffsetEntry{{topic, 0, 0}}); err == nil {
			t.Errorf("topic %q encoded", topic)
		}
	}
}

// Kafka reads an empty file, or a version line alone, as no entries; the
// last line may lack its newline, and "\r\n" endings read as "\n".
func TestDecodeLenientAsKafka(t *testing.T) {
	for _, in := range []string{"", "0\n", "0", "0\n0\n", "0\r\n0\r\n"} {
		got, err := DecodeEpochs([]byte(in))
		if err != nil || len(got) != 0 {
			t.Errorf("%q: %v %v, want no entries", in, got, err)
		}
	}
	for _, in := range []string{"0\n1\n5 100", "0\r\n1\r\n5 100\r\n", "0\n1\n5  100 \n"} {
		got, err := DecodeEpochs([]byte(in))
		if err != nil || len(got) != 1 || got[0] != (EpochEntry{5, 100}) {
			t.Errorf("%q: %v %v, want [{5 100}]", in, got, err)
		}
	}
}

func TestDecodeEpochsMalformed(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"version 1", "1\n0\n", "line 1"},
		{"version word", "zero\n0\n", "line 1"},
		{"negative version", "-0x\n0\n", "line 1"},
		{"count word", "0\ntwo\n0 0\n1 5\n", "line 2"},
		{"negative count", "0\n-1\n", "line 2"},
		{"count too big for int32", "0\n2147483648\n", "line 2"},
		{"count above lines", "0\n3\n0 0\n1 5\n", "claims 3 entries, holds 2"},
		{"count below lines", "0\n1\n0 0\n1 5\n", "claims 1 entries, holds 2"},
		{"huge count", "0\n2000000000\n0 0\n", "claims 2000000000"},
		{"empty line", "0\n2\n0 0\n\n", "line 4"},
		{"blank line in middle", "0\n2\n\n0 0\n", "line 3"},
		{"one field", "0\n1\n7\n", "want 2 fields, got 1"},
		{"three fields", "0\n1\n7 8 9\n", "want 2 fields, got 3"},
		{"epoch word", "0\n1\nx 8\n", "epoch"},
		{"negative epoch", "0\n1\n-1 8\n", "epoch: negative"},
		{"epoch above int32", "0\n1\n2147483648 8\n", "epoch"},
		{"offset word", "0\n1\n1 eight\n", "start offset"},
		{"negative offset", "0\n1\n1 -8\n", "start offset: negative"},
		{"offset above int64", "0\n1\n1 9223372036854775808\n", "start offset"},
		{"offset float", "0\n1\n1 8.0\n", "start offset"},
		{"hex", "0\n1\n0x1 8\n", "epoch"},
		{"nul", "0\n1\n1\x008\n", "line 3"},
	} {
		_, err := DecodeEpochs([]byte(tc.in))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrMalformed mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestDecodeOffsetsMalformed(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"two fields", "0\n1\nt 0\n", "want 3 fields, got 2"},
		{"four fields", "0\n1\nt 0 1 2\n", "want 3 fields, got 4"},
		{"bad topic", "0\n1\nt$ 0 1\n", "character"},
		{"dot topic", "0\n1\n.. 0 1\n", "topic name"},
		{"long topic", "0\n1\n" + strings.Repeat("t", 250) + " 0 1\n", "limit 249"},
		{"partition word", "0\n1\nt p 1\n", "partition"},
		{"negative partition", "0\n1\nt -1 1\n", "partition: negative"},
		{"negative offset", "0\n1\nt 0 -1\n", "offset: negative"},
		{"duplicate", "0\n2\nt 0 1\nt 0 2\n", "listed twice"},
		{"count mismatch", "0\n2\nt 0 1\n", "claims 2 entries, holds 1"},
	} {
		_, err := DecodeOffsets([]byte(tc.in))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrMalformed mentioning %q", tc.name, err, tc.want)
		}
	}
}

// A long hostile line is quoted short in the error.
func TestMalformedErrorIsBounded(t *testing.T) {
	_, err := DecodeEpochs([]byte("0\n1\n" + strings.Repeat("9", 1<<20) + "\n"))
	if err == nil || len(err.Error()) > 300 {
		t.Fatalf("error of %d bytes: %.100v", len(err.Error()), err)
	}
}

// A claimed count is never what the decoder allocates for.
func TestHugeCountDoesNotAllocate(t *testing.T) {
	in := []byte("0\n2147483647\n0 0\n")
	allocs := testing.AllocsPerRun(10, func() { _, _ = DecodeEpochs(in) })
	if allocs > 20 {
		t.Fatalf("%v allocations for a 3-line file", allocs)
	}
}

func TestWriteFileReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), LeaderEpochFile)
	fsys := storage.OSFS{}
	if b, err := ReadFile(fsys, path); b != nil || err != nil {
		t.Fatalf("missing file: %q %v, want nil nil", b, err)
	}
	for _, entries := range [][]EpochEntry{{{0, 0}}, {{0, 0}, {1, 7}}} {
		if err := WriteFile(fsys, path, EncodeEpochs(entries)); err != nil {
			t.Fatal(err)
		}
		b, err := ReadFile(fsys, path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, EncodeEpochs(entries)) {
			t.Fatalf("read %q", b)
		}
	}
	if _, err := fsys.Stat(path + ".tmp"); err == nil {
		t.Fatal("temporary file left behind")
	}
}

// A failed write (a torn temp file, an fsync error, a failed rename) leaves
// the previous file whole.
func TestWriteFileFaultKeepsOldFile(t *testing.T) {
	old := EncodeEpochs([]EpochEntry{{0, 0}})
	for _, f := range []errorfs.Fault{
		{Op: errorfs.OpWrite, PathSuffix: ".tmp", TornBytes: 3, Err: errorfs.ENOSPC},
		{Op: errorfs.OpSync, PathSuffix: ".tmp"},
		{Op: errorfs.OpRename},
		{Op: errorfs.OpOpen, PathSuffix: ".tmp"},
	} {
		path := filepath.Join(t.TempDir(), LeaderEpochFile)
		fsys := errorfs.New(nil)
		if err := WriteFile(fsys, path, old); err != nil {
			t.Fatal(err)
		}
		fsys.Inject(f)
		if err := WriteFile(fsys, path, EncodeEpochs([]EpochEntry{{0, 0}, {5, 50}})); err == nil {
			t.Fatalf("fault %+v: write succeeded", f)
		}
		fsys.Clear()
		b, err := ReadFile(fsys, path)
		if err != nil || !bytes.Equal(b, old) {
			t.Fatalf("fault %+v: file now %q %v, want %q", f, b, err, old)
		}
	}
}

// The directory is fsynced after the rename, or the rename may not last.
func TestWriteFileSyncsDirectory(t *testing.T) {
	dir := t.TempDir()
	fsys := errorfs.New(nil)
	fsys.Inject(errorfs.Fault{Op: errorfs.OpSync, PathSuffix: filepath.Base(dir)})
	if err := WriteFile(fsys, filepath.Join(dir, ReplicationOffsetFile), []byte("0\n0\n")); err == nil {
		t.Fatal("a failed directory fsync was not reported")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("0\n2\n0 0\n3 1500\n"))
	f.Add([]byte("0\n2\norders 0 42\n__consumer_offsets 17 0\n"))
	f.Add([]byte("0\n2147483647\n"))
	f.Add([]byte("0\r\n1\r\nt 1 2"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if epochs, err := DecodeEpochs(data); err == nil {
			again, err := DecodeEpochs(EncodeEpochs(epochs))
			if err != nil || len(again) != len(epochs) {
				t.Fatalf("re-decode of %v: %v %v", epochs, again, err)
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatalf("error not ErrMalformed: %v", err)
		}
		if offsets, err := DecodeOffsets(data); err == nil {
			b, err := EncodeOffsets(offsets)
			if err != nil {
				t.Fatalf("decoded entries do not encode: %v", err)
			}
			again, err := DecodeOffsets(b)
			if err != nil || len(again) != len(offsets) {
				t.Fatalf("re-decode of %v: %v %v", offsets, again, err)
			}
		} else if !errors.Is(err, ErrMalformed) {
			t.Fatalf("error not ErrMalformed: %v", err)
		}
	})
}

func TestReadWriteEntries(t *testing.T) {
	dir := t.TempDir()
	fsys := storage.OSFS{}
	epochs := []EpochEntry{{0, 0}, {4, 90}}
	if err := WriteEpochs(fsys, filepath.Join(dir, LeaderEpochFile), epochs); err != nil {
		t.Fatal(err)
	}
	got, err := ReadEpochs(fsys, filepath.Join(dir, LeaderEpochFile))
	if err != nil || len(got) != 2 || got[1] != epochs[1] {
		t.Fatalf("epochs %v %v", got, err)
	}
	offsets := []OffsetEntry{{"t", 0, 5}}
	if err := WriteOffsets(fsys, filepath.Join(dir, ReplicationOffsetFile), offsets); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadOffsets(fsys, filepath.Join(dir, ReplicationOffsetFile)); err != nil || len(got) != 1 || got[0] != offsets[0] {
		t.Fatalf("offsets %v %v", got, err)
	}
	if got, err := ReadOffsets(fsys, filepath.Join(dir, RecoveryPointFile)); err != nil || len(got) != 0 {
		t.Fatalf("missing file: %v %v", got, err)
	}
	if err := WriteOffsets(fsys, filepath.Join(dir, RecoveryPointFile), []OffsetEntry{{"bad topic", 0, 0}}); err == nil {
		t.Fatal("unreadable topic written")
	}
	if err := WriteFile(fsys, filepath.Join(dir, LeaderEpochFile), []byte("0\n5\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadEpochs(fsys, filepath.Join(dir, LeaderEpochFile)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), LeaderEpochFile) {
		t.Fatalf("malformed file: %v", err)
	}
}

// A replication-offset-checkpoint cut short (a write torn by a crash on a
// file system that does not order the rename after the data) is an error
// wherever the cut falls, except after a whole last line, which holds as
// many lines as the count claims only if it is complete.
func TestDecodeOffsetsTruncated(t *testing.T) {
	whole := "0\n3\norders 0 42\norders 1 7\npayments 0 1000\n"
	lastOffset := strings.LastIndexByte(whole, ' ') + 1
	for n := 1; n < len(whole); n++ {
		cut := whole[:n]
		got, err := DecodeOffsets([]byte(cut))
		switch {
		case n == len(whole)-1: // only the final newline lost: Kafka reads it too
			if err != nil || len(got) != 3 {
				t.Errorf("%q: %v %v, want 3 entries", cut, got, err)
			}
		case cut == "0" || cut == "0\n":
			if err != nil || len(got) != 0 {
				t.Errorf("%q: %v %v, want no entries, as Kafka", cut, got, err)
			}
		case n > lastOffset:
			// Cut inside the last offset: the count matches and the number
			// reads short, which no format without a checksum can tell;
			// the atomic write is what prevents it.
		default:
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%q: %v %v, want ErrMalformed", cut, got, err)
			}
		}
	}
}

// Claimed counts, line lengths and numbers out of range are refused
// without allocating for what the file claims.
func TestDecodeOffsetsHostile(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"huge count", "0\n2147483647\nt 0 1\n", "claims 2147483647 entries, holds 1"},
		{"count beyond int32", "0\n99999999999\nt 0 1\n", "line 2"},
		{"negative count", "0\n-1\n", "line 2"},
		{"offset beyond int64", "0\n1\nt 0 9223372036854775808\n", "offset"},
		{"negative offset", "0\n1\nt 0 -9223372036854775808\n", "offset: negative"},
		{"partition beyond int32", "0\n1\nt 2147483648 1\n", "partition"},
	} {
		_, err := DecodeOffsets([]byte(tc.in))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrMalformed mentioning %q", tc.name, err, tc.want)
		}
	}
	in := []byte("0\n2147483647\nt 0 0\n")
	if allocs := testing.AllocsPerRun(10, func() { _, _ = DecodeOffsets(in) }); allocs > 20 {
		t.Fatalf("%v allocations for a 3-line file claiming 2^31-1 entries", allocs)
	}
}

// The high watermarks of many partitions read back as written.
func TestOffsetsRoundTripManyPartitions(t *testing.T) {
	var entries []OffsetEntry
	for p := range int32(500) {
		entries = append(entries, OffsetEntry{Topic: "orders", Partition: p, Offset: int64(p) * 1_000_003})
	}
	path := filepath.Join(t.TempDir(), ReplicationOffsetFile)
	if err := WriteOffsets(storage.OSFS{}, path, entries); err != nil {
		t.Fatal(err)
	}
	got, err := ReadOffsets(storage.OSFS{}, path)
	if err != nil || len(got) != len(entries) {
		t.Fatalf("%d entries, %v", len(got), err)
	}
	for i := range got {
		if got[i] != entries[i] {
			t.Fatalf("entry %d: %v, want %v", i, got[i], entries[i])
		}
	}
}
