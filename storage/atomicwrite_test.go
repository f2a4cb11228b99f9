package storage_test

import (
	"errors"
	"io"
	"os"
	"testing"

	"github.com/ferry-mq/ferry/storage"
	"github.com/ferry-mq/ferry/storage/errorfs"
	"github.com/ferry-mq/ferry/storage/memfs"
)

func readWhole(t *testing.T, fsys storage.FS, path string) string {
	t.Helper()
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A durable replacement survives a crash whole; an atomic one is never a
// mix of the two versions.
func TestWriteFileAtomicAcrossACrash(t *testing.T) {
	fs := memfs.New()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := storage.WriteFileAtomic(fs, "/d/f", []byte("old"), 0o600, storage.Durable); err != nil {
		t.Fatal(err)
	}
	if err := storage.WriteFileAtomic(fs, "/d/f", []byte("newer"), 0o600, storage.Durable); err != nil {
		t.Fatal(err)
	}
	if got := readWhole(t, fs.CrashImage(nil), "/d/f"); got != "newer" {
		t.Fatalf("after a crash: %q", got)
	}
	if err := storage.WriteFileAtomic(fs, "/d/f", []byte("unsynced"), 0o600, storage.Atomic); err != nil {
		t.Fatal(err)
	}
	if got := readWhole(t, fs.CrashImage(nil), "/d/f"); got != "" && got != "unsynced" && got != "newer" {
		t.Fatalf("an atomic replacement after a crash: %q", got)
	}
	if _, err := fs.Stat("/d/f.tmp"); err == nil {
		t.Fatal("temporary file left behind")
	}
}

// A failed replacement leaves the old file and no temporary file; a
// directory removed meanwhile is not made again.
func TestWriteFileAtomicFailureKeepsTheOldFile(t *testing.T) {
	inner := memfs.New()
	if err := inner.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	fs := errorfs.New(inner)
	if err := storage.WriteFileAtomic(fs, "/d/f", []byte("old"), 0o644, storage.Durable); err != nil {
		t.Fatal(err)
	}
	for _, op := range []errorfs.Op{errorfs.OpWrite, errorfs.OpSync, errorfs.OpRename} {
		fs.Inject(errorfs.Fault{Op: op, Times: 1})
		if err := storage.WriteFileAtomic(fs, "/d/f", []byte("new"), 0o644, storage.Durable); !errors.Is(err, errorfs.EIO) {
			t.Fatalf("op %v failing: %v", op, err)
		}
		if got := readWhole(t, inner, "/d/f"); got != "old" {
			t.Fatalf("op %v failing left %q", op, got)
		}
		if _, err := inner.Stat("/d/f.tmp"); err == nil {
			t.Fatalf("op %v failing left the temporary file", op)
		}
	}
	if err := storage.WriteFileAtomic(fs, "/gone/f", []byte("x"), 0o644, storage.Durable); err == nil {
		t.Fatal("wrote into a directory that does not exist")
	}
}
