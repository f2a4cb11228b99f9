package replication

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/replication/checkpoint"
	"github.com/ferry-mq/ferry/storage"
)

// MetaPropertiesFile names the data dir's identity, as Kafka's
// meta.properties does: which broker of which cluster the logs belong to.
const MetaPropertiesFile = "meta.properties"

// ErrWrongCluster: the data dir holds another cluster's (or broker's)
// logs; starting would mix them.
var ErrWrongCluster = errors.New("the data dir belongs to another cluster or broker")

// maxMetaPropertiesBytes bounds the read of a file that holds three keys.
const maxMetaPropertiesBytes = 64 << 10

// CheckDataDir compares dir's meta.properties with the broker's id and
// cluster id and writes it when missing. A different cluster.id always
// refuses (Kafka's InconsistentClusterIdException); a different broker.id
// refuses when strictBrokerID (on a cluster, where another broker may own
// the id; a single node may be renumbered and the file is updated).
func CheckDataDir(dir string, brokerID int32, clusterID string, strictBrokerID bool) error {
	path := filepath.Join(dir, MetaPropertiesFile)
	stored, err := readMetaProperties(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		if id, ok := stored["cluster.id"]; ok && id != clusterID {
			return fmt.Errorf("%w: the cluster id %s does not match cluster.id %s stored in %s; the broker is trying to join the wrong cluster (is zookeeper.connect, or its chroot, right?)",
				ErrWrongCluster, clusterID, id, path)
		}
		if id, ok := stored["broker.id"]; ok && id != strconv.Itoa(int(brokerID)) && strictBrokerID {
			return fmt.Errorf("%w: the configured broker.id %d does not match broker.id %s stored in %s; if the data moved, configure that id; for a new broker, start with an empty data dir",
				ErrWrongCluster, brokerID, id, path)
		}
		if stored["cluster.id"] == clusterID && stored["broker.id"] == strconv.Itoa(int(brokerID)) {
			return nil
		}
	}
	return checkpoint.WriteFile(storage.OSFS{}, path, metaProperties(brokerID, clusterID))
}

func metaProperties(brokerID int32, clusterID string) []byte {
	return fmt.Appendf(nil, "#\n#%s\ncluster.id=%s\nversion=0\nbroker.id=%d\n",
		time.Now().UTC().Format(time.UnixDate), clusterID, brokerID)
}

// readMetaProperties parses a Java properties file of simple key=value
// lines, as Kafka writes it.
func readMetaProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMetaPropertiesBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxMetaPropertiesBytes {
		return nil, fmt.Errorf("%s is over %d bytes; it holds three keys", path, maxMetaPropertiesBytes)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s: line %q is not key=value", path, line)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if v := out["version"]; v != "" && v != "0" && v != "1" {
		return nil, fmt.Errorf("%s: version %s; this ferry reads versions 0 and 1", path, v)
	}
	return out, nil
}
