// Package atomicfile replaces small files (users, ACLs, quotas, tokens,
// secrets) so that a crash leaves either the old file or the new one,
// never half of either: a temporary file in the same directory, fsync,
// rename over the old one, fsync of the directory.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data, creating its directory if need be. The
// file gets mode (before any byte is written, so a secret is never
// readable by others even for a moment).
func Write(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // nothing left to remove once renamed
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
