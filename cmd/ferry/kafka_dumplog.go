package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ferry-mq/ferry/server/records"
	"github.com/ferry-mq/ferry/storage/recordbatch"
)

// kafkaDumpLog is kafka-dump-log.sh: prints the batches (and with
// --deep-iteration or --print-data-log the records) of segment files,
// and the entries of offset and time indexes. ferry's segments are
// Kafka's, so the tool reads them offline as Kafka's does.
func kafkaDumpLog(args []string) error {
	t := newKafkaTool("kafka-dump-log.sh", "This tool helps to parse a log file and dump its contents to the console, useful for debugging a seemingly corrupt log segment.", "", false)
	var files string
	var deep, printData, verifyOnly bool
	var maxBytes int64 = 5 << 20
	t.str(&files, "files", "String: file1, file2, ...", "REQUIRED: The comma separated list of data and index log files to be dumped.")
	t.flag(&deep, "deep-iteration", "if set, uses deep instead of shallow iteration. Automatically set if print-data-log is enabled.")
	t.flag(&printData, "print-data-log", "if set, printing the messages content when dumping data logs. Automatically set if any decoder option is specified.")
	t.flag(&verifyOnly, "verify-index-only", "if set, just verify the index log without printing its content.")
	t.num(&maxBytes, "max-bytes", "Integer: size", "Limit the amount of total batches read in bytes avoiding reading the whole .log file(s).")
	if err := t.parse(args); err != nil {
		return err
	}
	if files == "" {
		return t.usage("Missing required argument \"[files]\"")
	}
	for _, f := range strings.Split(files, ",") {
		fmt.Printf("Dumping %s\n", f)
		var err error
		switch filepath.Ext(f) {
		case ".log":
			err = dumpSegment(f, deep || printData, printData, maxBytes)
		case ".index":
			err = dumpIndex(f, 8, verifyOnly)
		case ".timeindex":
			err = dumpIndex(f, 12, verifyOnly)
		default:
			err = fmt.Errorf("Ignoring unknown file %s", f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// baseOffsetOf reads the base offset from a segment file's name.
func baseOffsetOf(path string) (int64, error) {
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	n, err := strconv.ParseInt(name, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: the name is not a base offset (00000000000000000000.log)", path)
	}
	return n, nil
}

func dumpSegment(path string, deep, printData bool, maxBytes int64) error {
	base, err := baseOffsetOf(path)
	if err != nil {
		return err
	}
	data, err := readBounded(path, maxBytes)
	if err != nil {
		return err
	}
	fmt.Printf("Log starting offset: %d\n", base)
	pos := 0
	for pos < len(data) {
		batch, _, err := recordbatch.Next(data[pos:])
		if err != nil {
			return fmt.Errorf("%s: position %d: %w", path, pos, err)
		}
		if batch == nil {
			fmt.Printf("Found %d invalid bytes at the end of %s\n", len(data)-pos, filepath.Base(path))
			return nil
		}
		h, err := recordbatch.ParseHeader(batch)
		if err != nil {
			return fmt.Errorf("%s: position %d: %w", path, pos, err)
		}
		printBatchHeader(h, batch, pos)
		if deep {
			if err := printRecords(h, batch, printData); err != nil {
				return fmt.Errorf("%s: batch at %d: %w", path, pos, err)
			}
		}
		pos += len(batch)
	}
	return nil
}

func readBounded(path string, maxBytes int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	n := st.Size()
	if maxBytes > 0 && n > maxBytes {
		n = maxBytes
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil && int64(len(buf)) != n {
		return nil, err
	}
	return buf, nil
}

func printBatchHeader(h recordbatch.Header, batch []byte, pos int) {
	lastSeq := int32(-1)
	if h.BaseSequence >= 0 {
		lastSeq = h.BaseSequence + h.LastOffsetDelta
	}
	horizon := "OptionalLong.empty"
	if ms, ok := h.DeleteHorizon(); ok {
		horizon = fmt.Sprintf("OptionalLong[%d]", ms)
	}
	tsType := "CreateTime"
	if h.LogAppendTime() {
		tsType = "LogAppendTime"
	}
	valid := h.VerifyCRC(batch) == nil
	fmt.Printf("baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		h.BaseOffset, h.LastOffset(), h.RecordCount, h.BaseSequence, lastSeq, h.ProducerID, h.ProducerEpoch, h.LeaderEpoch,
		h.Attributes&recordbatch.AttrTransactional != 0, h.IsControl(), horizon, pos, tsType, h.MaxTimestamp, len(batch), h.Magic,
		records.Codec(h.Codec()), h.CRC, valid)
}

func printRecords(h recordbatch.Header, batch []byte, printData bool) error {
	tsType := "CreateTime"
	if h.LogAppendTime() {
		tsType = "LogAppendTime"
	}
	return records.Decode(batch, 0, 0, func(r records.Record) bool {
		seq := int32(-1)
		if h.BaseSequence >= 0 {
			seq = h.BaseSequence + int32(r.Offset-h.BaseOffset)
		}
		keys := make([]string, len(r.Headers))
		for i, hd := range r.Headers {
			keys[i] = hd.Key
		}
		keySize, valueSize := -1, -1
		if r.Key != nil {
			keySize = len(r.Key)
		}
		if r.Value != nil {
			valueSize = len(r.Value)
		}
		fmt.Printf("| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
			r.Offset, tsType, r.Timestamp, keySize, valueSize, seq, strings.Join(keys, ","))
		if printData {
			if r.Key != nil {
				fmt.Printf(" key: %s", r.Key)
			}
			if r.Value != nil {
				fmt.Printf(" payload: %s", r.Value)
			}
		}
		fmt.Println()
		return true
	})
}

// dumpIndex prints an offset index (8-byte entries: relative offset,
// position) or a time index (12 bytes: timestamp, relative offset).
func dumpIndex(path string, entry int, verifyOnly bool) error {
	base, err := baseOffsetOf(path)
	if err != nil {
		return err
	}
	data, err := readBounded(path, 0)
	if err != nil {
		return err
	}
	be := binary.BigEndian
	for i := 0; i+entry <= len(data); i += entry {
		if entry == 8 {
			rel, pos := be.Uint32(data[i:]), be.Uint32(data[i+4:])
			if rel == 0 && pos == 0 && i > 0 {
				break // preallocated, unused
			}
			if !verifyOnly {
				fmt.Printf("offset: %d position: %d\n", base+int64(rel), pos)
			}
			continue
		}
		ts, rel := int64(be.Uint64(data[i:])), be.Uint32(data[i+8:])
		if ts == 0 && rel == 0 && i > 0 {
			break
		}
		if !verifyOnly {
			fmt.Printf("timestamp: %d offset: %d\n", ts, base+int64(rel))
		}
	}
	return nil
}
