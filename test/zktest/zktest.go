// Package zktest opens ferry's ZooKeeper client in tests of the packages
// that keep their state in ZooKeeper (server/acl, server/auth,
// server/quota), under a chroot of their own on a test/zkserver server,
// and reads znodes' bytes with a plain client, as zkCli.sh would.
package zktest

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ferry-mq/ferry/replication/zookeeper"
)

var chrootSeq atomic.Int64

// Chroot is a chroot no other test (nor a -count rerun) uses.
func Chroot(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/ferry-test/%s-%d-%d", name, os.Getpid(), chrootSeq.Add(1))
}

// Open is one broker's session on connect (a server and chroot), closed
// at the test's end; its session events are drained, as a broker's are.
func Open(t testing.TB, connect string) *zookeeper.Client {
	t.Helper()
	c, err := zookeeper.Open(connect, 10*time.Second, slog.New(slog.DiscardHandler))
	// A loaded machine (CI, brokers of other tests) can keep the shared
	// server from answering within one session timeout: try again.
	for attempt := 1; attempt < 3 && errors.Is(err, zookeeper.ErrConnectionLoss); attempt++ {
		t.Logf("open %s: %v; trying again", connect, err)
		c, err = zookeeper.Open(connect, 10*time.Second, slog.New(slog.DiscardHandler))
	}
	if err != nil {
		t.Fatalf("open %s: %v", connect, err)
	}
	go func() {
		for range c.Events() {
		}
	}()
	t.Cleanup(func() { c.Close() })
	return c
}

// Raw reads the znode at path (absolute, chroot included) on the server
// at addr.
func Raw(t testing.TB, addr, path string) []byte {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data, _, err := conn.Get(path)
	if err != nil {
		t.Fatalf("get %s: %v", path, err)
	}
	return data
}

// quiet keeps go-zookeeper's connection chatter out of the test output.
type quiet struct{}

func (quiet) Printf(string, ...any) {}
