package replication

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDataDirIdentity(t *testing.T) {
	dir := t.TempDir()
	if err := CheckDataDir(dir, 1, "clusterA", true); err != nil {
		t.Fatalf("first start: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, MetaPropertiesFile))
	if err != nil || !strings.Contains(string(data), "cluster.id=clusterA\n") || !strings.Contains(string(data), "broker.id=1\n") {
		t.Fatalf("meta.properties: %q, %v", data, err)
	}
	if err := CheckDataDir(dir, 1, "clusterA", true); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if err := CheckDataDir(dir, 1, "clusterB", true); !errors.Is(err, ErrWrongCluster) || !strings.Contains(err.Error(), "clusterA") {
		t.Fatalf("another cluster: %v", err)
	}
	if err := CheckDataDir(dir, 2, "clusterA", true); !errors.Is(err, ErrWrongCluster) || !strings.Contains(err.Error(), "broker.id 2") {
		t.Fatalf("another broker id on a cluster: %v", err)
	}
	if err := CheckDataDir(dir, 2, "clusterA", false); err != nil {
		t.Fatalf("a single node renumbered: %v", err)
	}
	if err := CheckDataDir(dir, 2, "clusterA", true); err != nil {
		t.Fatalf("after the renumbering the file names broker 2: %v", err)
	}
}

func TestDataDirIdentityReadsKafkasFile(t *testing.T) {
	dir := t.TempDir()
	kafka := "#\n#Tue Dec 01 10:00:00 UTC 2026\ncluster.id=Xy_12\nversion=0\nbroker.id=3\n"
	if err := os.WriteFile(filepath.Join(dir, MetaPropertiesFile), []byte(kafka), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckDataDir(dir, 3, "Xy_12", true); err != nil {
		t.Fatalf("Kafka's own meta.properties: %v", err)
	}
	for name, body := range map[string]string{
		"not key=value": "cluster.id\n",
		"version 2":     "version=2\ncluster.id=Xy_12\n",
		"huge":          strings.Repeat("#", maxMetaPropertiesBytes+1),
	} {
		if err := os.WriteFile(filepath.Join(dir, MetaPropertiesFile), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := CheckDataDir(dir, 3, "Xy_12", true); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
