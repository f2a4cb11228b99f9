package errorfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ferry-mq/ferry/storage/errorfs"
)

func TestFaults(t *testing.T) {
	fs := errorfs.New(nil)
	path := filepath.Join(t.TempDir(), "f.log")
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fs.Inject(errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: ".log", Err: syscall.ENOSPC, TornBytes: 3, After: 1, Times: 1})
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatalf("first write (After 1): %v", err)
	}
	n, err := f.WriteAt([]byte("world"), 5)
	if n != 3 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("torn write: %d, %v", n, err)
	}
	if _, err := f.WriteAt([]byte("!"), 8); err != nil {
		t.Fatalf("fault should be used up: %v", err)
	}
	buf := make([]byte, 9)
	if n, _ := f.ReadAt(buf, 0); n != 9 || string(buf) != "hellowor!" || fs.BytesRead() != 9 {
		t.Fatalf("read %q, counted %d", buf[:n], fs.BytesRead())
	}
	fs.Inject(errorfs.Fault{Op: errorfs.OpSync})
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync: %v", err)
	}
	fs.Clear()
	if err := f.Sync(); err != nil || fs.Syncs() != 1 {
		t.Fatalf("sync after Clear: %v, %d syncs", err, fs.Syncs())
	}
	hooked := ""
	fs.Inject(errorfs.Fault{Op: errorfs.OpRead, Hook: func(p string) { hooked = p }, Times: 1})
	if _, err := f.ReadAt(buf[:1], 0); err != nil || hooked != path {
		t.Fatalf("hook: %v, %q", err, hooked)
	}
}
