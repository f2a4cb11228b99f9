// Package atomicfile replaces the core's small files in the data dir
// (users, ACLs, quotas, tokens, secrets) with storage's one atomic writer,
// durably, making the directory first: a CLI may write them before any
// broker has run on the data dir.
package atomicfile

import (
	"os"
	"path/filepath"

	"github.com/ferry-mq/ferry/storage"
)

// Write replaces path with data, creating its directory if need be. The
// file gets mode from its creation on, so a secret is never readable by
// others even for a moment.
func Write(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return storage.WriteFileAtomic(storage.OSFS{}, path, data, mode, storage.Durable)
}
