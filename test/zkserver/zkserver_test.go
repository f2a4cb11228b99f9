package zkserver

import (
	"net"
	"os"
	"testing"
	"time"
)

var zks Shared

func TestMain(m *testing.M) { os.Exit(zks.Main(m)) }

func TestSharedAnswersRuok(t *testing.T) {
	srv := zks.Require(t)
	if err := Ruok(srv.Addr()); err != nil {
		t.Fatal(err)
	}
	if err := Serving(srv.Addr()); err != nil {
		t.Fatalf("a server Require returned does not serve: %v", err)
	}
}

func TestStartStopKillRestart(t *testing.T) {
	start := time.Now()
	srv := Start(t)
	t.Logf("ZooKeeper ready in %v on %s", time.Since(start), srv.Addr())
	port := srv.Port()
	srv.Freeze()
	if err := ruokWithin(srv.Addr(), 300*time.Millisecond); err == nil {
		t.Fatal("a frozen server answered ruok")
	}
	srv.Thaw()
	if err := Ruok(srv.Addr()); err != nil {
		t.Fatalf("after thaw: %v", err)
	}
	srv.Kill()
	if err := Ruok(srv.Addr()); err == nil {
		t.Fatal("a killed server answered ruok")
	}
	start = time.Now()
	srv.Restart()
	t.Logf("restart ready in %v", time.Since(start))
	if srv.Port() != port || Ruok(srv.Addr()) != nil {
		t.Fatalf("restart: port %d (was %d)", srv.Port(), port)
	}
	srv.Stop()
	if srv.PID() != 0 {
		t.Fatal("pid after stop")
	}
}

func ruokWithin(addr string, d time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(d))
	c.Write([]byte("ruok"))
	b := make([]byte, 4)
	_, err = c.Read(b)
	return err
}

func TestProxyCutAndPause(t *testing.T) {
	srv := zks.Require(t)
	p := NewProxy(t, srv.Addr())
	if err := Ruok(p.Addr()); err != nil {
		t.Fatalf("through proxy: %v", err)
	}
	p.Pause()
	if err := ruokWithin(p.Addr(), 300*time.Millisecond); err == nil {
		t.Fatal("paused proxy forwarded")
	}
	p.Resume()
	if err := Ruok(p.Addr()); err != nil {
		t.Fatalf("after resume: %v", err)
	}
	p.Cut()
	if err := Ruok(p.Addr()); err == nil {
		t.Fatal("cut proxy forwarded")
	}
	p.Restore()
	if err := Ruok(p.Addr()); err != nil {
		t.Fatalf("after restore: %v", err)
	}
}
