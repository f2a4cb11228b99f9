package storage

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Small files in the partition directory besides the segments.
const (
	// recoveryPointFile holds the offset below which everything was fsynced.
	recoveryPointFile = "recovery-point-offset-checkpoint"
	// logStartFile holds the log start offset (retention, DeleteRecords).
	logStartFile = "log-start-offset-checkpoint"
	// cleanShutdownFile exists only between a clean Close and the next Open.
	cleanShutdownFile = ".clean-shutdown"
	checkpointVersion = "0"
)

// writeCheckpoint replaces path with "0\n<value>\n" (WriteFileAtomic), so a
// reader sees the old or the new value, never a mix.
func writeCheckpoint(fsys FS, path string, value int64) error {
	data := []byte(checkpointVersion + "\n" + strconv.FormatInt(value, 10) + "\n")
	return WriteFileAtomic(fsys, path, data, 0o644, Durable)
}

// recoveryCheckpoint rewrites the recovery point in place, in an open file
// with a fixed-width record. After every group-commit fsync a rename would
// cost a journal commit that stalls the next write(2) for milliseconds; an
// in-place pwrite of one short record costs a microsecond. The file is
// never fsynced: a stale value means a longer rescan, and a torn one reads
// as garbage, which means a full rescan; neither loses data. Owned by the
// sync token holder.
type recoveryCheckpoint struct {
	file *cachedFile // open through the FileCache only while written
	buf  []byte
}

// openRecoveryCheckpoint readies the checkpoint at path to hold value;
// when the file already holds it (a clean restart) nothing is opened.
func openRecoveryCheckpoint(fsys FS, files *FileCache, path string, value int64, holds bool) (*recoveryCheckpoint, error) {
	// A reopen never truncates: the fixed-width record covers anything
	// shorter that writeCheckpoint or an older version left.
	c := &recoveryCheckpoint{file: files.file(fsys, path, os.O_RDWR|os.O_CREATE)}
	if holds {
		return c, nil
	}
	if err := c.write(value); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// write stores value as "0\n" and 20 zero-padded digits and "\n".
func (c *recoveryCheckpoint) write(value int64) error {
	c.buf = append(c.buf[:0], checkpointVersion+"\n"...)
	c.buf = fmt.Appendf(c.buf, "%020d\n", value)
	f, err := c.file.acquire()
	if err == nil {
		_, err = f.WriteAt(c.buf, 0)
		c.file.release()
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", recoveryPointFile, err)
	}
	return nil
}

func (c *recoveryCheckpoint) close() { c.file.forget() }

// readCheckpoint returns the value in path; ok is false when the file is
// missing or unreadable garbage (a torn non-fsynced write), which callers
// treat as "no checkpoint": the safe, slower choice.
func readCheckpoint(fsys FS, path string) (value int64, ok bool, err error) {
	b, err := readSmallFile(fsys, path, 64)
	if err != nil || b == nil {
		return 0, false, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || lines[0] != checkpointVersion {
		return 0, false, nil
	}
	v, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || v < 0 {
		return 0, false, nil
	}
	return v, true, nil
}
