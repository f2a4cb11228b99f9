package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
)

// mountTinyTmpfs mounts a tmpfs of size on a new directory, unmounted at
// cleanup (registered before the node's, so it runs after the node is
// killed). It skips the test when this machine does not permit mount.
func mountTinyTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("a tiny tmpfs is needed to fill a real disk, and mount is not permitted here (%v: %s)",
			err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// produceValue POSTs one record to a partition and reports the status.
func produceValue(t *testing.T, node *harness.Node, topic string, partition int, value string) int {
	t.Helper()
	body := fmt.Sprintf(`{"records":[{"value":%q,"partition":%d}]}`, value, partition)
	res, err := http.Post(node.URL+"/kafka/"+topic, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// readPartitionValues reads every visible record value of a partition.
func readPartitionValues(t *testing.T, node *harness.Node, topic string, partition int) []string {
	t.Helper()
	var values []string
	for offset, pages := int64(0), 0; pages < 1000; pages++ {
		res, err := http.Get(fmt.Sprintf("%s/kafka/%s/partitions/%d/records?offset=%d&max_records=100",
			node.URL, topic, partition, offset))
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Records       []struct{ Value string }
			NextOffset    int64 `json:"next_offset"`
			HighWatermark int64 `json:"high_watermark"`
		}
		err = json.NewDecoder(res.Body).Decode(&page)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("read %s-%d at %d: %d %v", topic, partition, offset, res.StatusCode, err)
		}
		for _, r := range page.Records {
			values = append(values, r.Value)
		}
		if page.NextOffset >= page.HighWatermark || len(page.Records) == 0 {
			return values
		}
		offset = page.NextOffset
	}
	t.Fatal("read did not reach the high watermark in 1000 pages")
	return nil
}

// TestDiskFullPartitionRecoversWithoutRestart fills a real 2 MiB tmpfs data
// dir by producing until writes fail, checks /readyz (degraded, naming the
// partition; the other partition still counts as online) and /metrics,
// frees space by deleting a filler file, and checks that the same process
// takes writes again by itself and that every acknowledged record reads
// back once and no refused one does.
func TestDiskFullPartitionRecoversWithoutRestart(t *testing.T) {
	dataDir := mountTinyTmpfs(t, "2m")
	props := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(props, []byte("log.failure.probe.interval.ms=100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	node := harness.Start(t, "--data-dir", dataDir, "--config", props)
	res, err := http.Post(node.URL+"/topics", "application/json", strings.NewReader(`{"name":"full","partitions":2}`))
	if err != nil || res.StatusCode != 201 {
		t.Fatalf("create topic: %v %v", err, res)
	}
	res.Body.Close()
	filler := filepath.Join(dataDir, "filler")
	if err := os.WriteFile(filler, bytes.Repeat([]byte{'f'}, 512<<10), 0o644); err != nil {
		t.Fatal(err)
	}

	acked := fillPartition(t, node, "full", 0)
	// Take the last bytes too, so the failed-log probe (every 100 ms) cannot
	// succeed and recover the partition before the checks below: what the
	// 16 KiB record did not fit in may still hold a small one.
	rest := fillRest(t, dataDir)
	if status := produceValue(t, node, "full", 0, "refused-again"); status != 500 {
		t.Fatalf("produce to the full partition answered %d, want 500", status)
	}
	r := getReadyz(t, node)
	t.Logf("/readyz on a full disk: %d %+v", r.Code, r)
	if r.Code != 200 || r.Status != "degraded" || !strings.Contains(r.Checks["storage"], "full-0") {
		t.Fatalf("/readyz on a full disk = %+v, want 200 degraded naming full-0", r)
	}
	m := scrapeMetrics(t, node)
	if v := m.value("ferry_offline_partitions"); v != 1 {
		t.Fatalf("ferry_offline_partitions = %v on a full disk, want 1", v)
	}
	if v := m.value("ferry_log_failed", "topic=full", "partition=0"); v != 1 {
		t.Fatalf("ferry_log_failed{full,0} = %v, want 1", v)
	}

	for _, f := range []string{filler, rest} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	harness.WaitFor(t, "/readyz to be ready after space was freed", 15*time.Second, func() bool {
		r = getReadyz(t, node)
		return r.Code == 200 && r.Status == "ready"
	})
	m = scrapeMetrics(t, node)
	if m.value("ferry_offline_partitions") != 0 || m.value("ferry_log_recoveries_total") < 1 {
		t.Fatalf("after recovery: offline %v, recoveries %v", m.value("ferry_offline_partitions"),
			m.value("ferry_log_recoveries_total"))
	}
	for i := range 3 {
		v := fmt.Sprintf("after-%d", i)
		if status := produceValue(t, node, "full", 0, v); status != 200 {
			t.Fatalf("produce after space was freed: %d\n%s", status, node.Logs())
		}
		acked = append(acked, v)
	}
	got := readPartitionValues(t, node, "full", 0)
	if strings.Join(got, ",") != strings.Join(acked, ",") {
		t.Fatalf("full-0 holds %d records, want the %d acknowledged once each, in order", len(got), len(acked))
	}
	t.Logf("%d acknowledged records read back once each, without a restart", len(acked))
}

// fillRest writes a file in dir until the file system has no byte left,
// and returns its path.
func fillRest(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler-rest")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err) // no room even for the file: already full
	}
	defer f.Close()
	chunk := make([]byte, 1024)
	for i := 0; i < 4096; i++ { // at most 4 MiB, twice the tmpfs
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	for n := 512; n > 0; n /= 2 { // the last partial kilobyte
		for j := 0; j < 2; j++ { // below 2n bytes remain once n fails
			if _, err := f.Write(chunk[:n]); err != nil {
				break
			}
		}
	}
	return path
}

// fillPartition produces 16 KiB records to a partition until one is
// refused with 500 (disk full), bounded in count and time, and returns the
// acknowledged values in order.
func fillPartition(t *testing.T, node *harness.Node, topic string, partition int) []string {
	t.Helper()
	pad := strings.Repeat("x", 16<<10)
	var acked []string
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		v := fmt.Sprintf("v%04d-%s", i, pad)
		switch status := produceValue(t, node, topic, partition, v); status {
		case 200:
			acked = append(acked, v)
		case 500:
			t.Logf("disk full after %d acknowledged records of %d KiB", len(acked), len(v)>>10)
			return acked
		default:
			t.Fatalf("produce %d answered %d", i, status)
		}
	}
	t.Fatalf("the 2 MiB data dir did not fill: %d records acknowledged", len(acked))
	return nil
}
