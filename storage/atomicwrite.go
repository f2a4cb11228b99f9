package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Durability says what a replaced file survives.
type Durability int

const (
	// Durable fsyncs the new file before the rename and the directory
	// after it: after a crash the file is the new one whenever the call
	// returned, and the old or the new one otherwise. For what is read
	// back as truth: checkpoints, users, ACLs, secrets, metadata.
	Durable Durability = iota
	// Atomic renames without an fsync: a crash may leave the old file,
	// the new one, or (on filesystems that reorder the rename before the
	// data) an empty or short one, never a mix of two versions. For what
	// a reader checks and can rebuild: the producer snapshots (CRC'd,
	// rebuilt from the log), as Kafka leaves them to the page cache.
	Atomic
)

// WriteFileAtomic replaces path with data through path+".tmp" and a
// rename, in a directory that must exist (one removed meanwhile, as a
// deleted partition's, is not made again); the file gets perm from
// its creation on. It is ferry's one way to replace a whole file: storage's
// checkpoints, replication's producer snapshots and checkpoint files, the
// core's user, ACL, quota and token files, the registry's journal.
func WriteFileAtomic(fsys FS, path string, data []byte, perm os.FileMode, d Durability) error {
	if err := writeFileAtomic(fsys, path, data, perm, d); err != nil {
		return fmt.Errorf("replace %s: %w", filepath.Base(path), err)
	}
	return nil
}

func writeFileAtomic(fsys FS, path string, data []byte, perm os.FileMode, d Durability) error {
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && d == Durable {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err != nil {
		fsys.Remove(tmp)
		return err
	}
	if d == Durable {
		return syncDir(fsys, filepath.Dir(path))
	}
	return nil
}

// syncDir makes a rename or a creation in dir durable.
func syncDir(fsys FS, dir string) error {
	f, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
