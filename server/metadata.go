package server

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// metadataFile is the single-node topic table on disk. With ZooKeeper it
// will live under /brokers/topics instead; the shape mirrors what Kafka keeps there.
const metadataFile = "ferry-topics.json"

type topicMeta struct {
	Name              string            `json:"name"`
	ID                string            `json:"id"` // 16 random bytes, base64url, like Kafka's topic ids
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
}

type clusterMeta struct {
	Version   int         `json:"version"`
	ClusterID string      `json:"cluster_id"`
	BrokerID  int32       `json:"broker_id"`
	Topics    []topicMeta `json:"topics"`
}

// loadMetadata reads the topic table; a missing file is a new data dir.
func loadMetadata(dir string) (clusterMeta, error) {
	var m clusterMeta
	data, err := os.ReadFile(filepath.Join(dir, metadataFile))
	if errors.Is(err, os.ErrNotExist) {
		return clusterMeta{Version: 1, ClusterID: newID()}, nil
	}
	if err != nil {
		return m, fmt.Errorf("read topic metadata: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("parse %s: %w", metadataFile, err)
	}
	return m, nil
}

// saveMetadata replaces the topic table atomically: a crash leaves either the
// old or the new file, never a mix.
func saveMetadata(dir string, m clusterMeta) error {
	sort.Slice(m.Topics, func(i, j int) bool { return m.Topics[i].Name < m.Topics[j].Name })
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, metadataFile), data)
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	err := writeAndRename(tmp, path, data)
	if err != nil {
		os.Remove(tmp) // a failed write leaves no stray file
		return err
	}
	return syncDir(filepath.Dir(path))
}

func writeAndRename(tmp, path string, data []byte) error {
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func newID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}
