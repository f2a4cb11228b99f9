package memfs_test

import (
	"errors"
	"io/fs"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/ferry-mq/ferry/storage/memfs"
)

func TestCrashImageKeepsOnlySyncedBytes(t *testing.T) {
	m := memfs.New()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := m.OpenFile("/d/a", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("durable"), 0)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("-lost"), 7)
	img := m.CrashImage(nil)
	g, err := img.OpenFile("/d/a", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 20)
	n, _ := g.ReadAt(buf, 0)
	if string(buf[:n]) != "durable" {
		t.Fatalf("crash image holds %q", buf[:n])
	}
	// With a random writeback, a prefix of the unsynced bytes may survive.
	img = m.CrashImage(rand.New(rand.NewSource(3)))
	g, _ = img.OpenFile("/d/a", os.O_RDONLY, 0)
	n, _ = g.ReadAt(buf, 0)
	if got := string(buf[:n]); got != "durable-lost"[:len(got)] || len(got) < 7 {
		t.Fatalf("crash image holds %q", got)
	}
	// A removed name keeps an open handle readable, as on Linux.
	if err := m.Remove("/d/a"); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.ReadAt(buf, 0); string(buf[:n]) != "durable-lost" {
		t.Fatalf("open handle after remove reads %q", buf[:n])
	}
	if _, err := m.Stat("/d/a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat after remove: %v", err)
	}
	if names, _ := m.ReadDir("/d"); len(names) != 0 {
		t.Fatalf("dir lists %v", names)
	}
}

// TestPowerLossImageUndoesUnsyncedNames: a rename, creation or removal
// since the directory's last fsync is lost in a power-loss image (with no
// random prefix kept) and kept in a kill image; after the fsync both keep
// it. A kill image keeps unsynced bytes, a power-loss image does not.
func TestPowerLossImageUndoesUnsyncedNames(t *testing.T) {
	fs := memfs.New()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, _ := fs.OpenFile("/d/a", os.O_RDWR|os.O_CREATE, 0o644)
	f.Write([]byte("synced"))
	f.Sync()
	dir, _ := fs.OpenFile("/d", os.O_RDONLY, 0)
	dir.Sync()
	f.Write([]byte("+tail"))
	if err := fs.Rename("/d/a", "/d/b"); err != nil {
		t.Fatal(err)
	}
	g, _ := fs.OpenFile("/d/c", os.O_RDWR|os.O_CREATE, 0o644)
	g.Sync()
	names := func(img *memfs.FS) string {
		ns, _ := img.ReadDir("/d")
		return strings.Join(ns, ",")
	}
	content := func(img *memfs.FS, name string) string {
		h, err := img.OpenFile(name, os.O_RDONLY, 0)
		if err != nil {
			return "<" + err.Error() + ">"
		}
		buf := make([]byte, 64)
		n, _ := h.ReadAt(buf, 0)
		return string(buf[:n])
	}
	if lost := fs.PowerLossImage(nil); names(lost) != "a" || content(lost, "/d/a") != "synced" {
		t.Fatalf("power loss before the dir fsync: %q holding %q", names(lost), content(lost, "/d/a"))
	}
	if killed := fs.KillImage(); names(killed) != "b,c" || content(killed, "/d/b") != "synced+tail" {
		t.Fatalf("kill: %q holding %q", names(killed), content(killed, "/d/b"))
	}
	dir.Sync()
	if lost := fs.PowerLossImage(nil); names(lost) != "b,c" || content(lost, "/d/b") != "synced" {
		t.Fatalf("power loss after the dir fsync: %q holding %q", names(lost), content(lost, "/d/b"))
	}
}
