package netns_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ferry-mq/ferry/test/harness"
	"github.com/ferry-mq/ferry/test/netns"
)

// TestMain lets this test binary serve as the program run inside a host:
// with FERRY_NETNS_HELPER=listen:<addr> it answers "hi" to every
// connection; with dial:<addr> it exits 0 when it reads "hi" from addr
// within a second, 1 otherwise.
func TestMain(m *testing.M) {
	what, addr, ok := strings.Cut(os.Getenv("FERRY_NETNS_HELPER"), ":")
	if !ok {
		os.Exit(m.Run())
	}
	switch what {
	case "listen":
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(2)
			}
			c.Write([]byte("hi"))
			c.Close()
		}
	case "dial":
		if !reachable(addr) {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(2)
}

func reachable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	b := make([]byte, 2)
	_, err = c.Read(b)
	return err == nil && string(b) == "hi"
}

const port = "7000"

// listen starts the helper listening on h's address.
func listen(t *testing.T, h *netns.Host) *exec.Cmd {
	t.Helper()
	cmd := h.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FERRY_NETNS_HELPER=listen:"+net.JoinHostPort(h.Addr, port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, h.Name+" listens", 10*time.Second, func() bool { return reachable(net.JoinHostPort(h.Addr, port)) })
	return cmd
}

// dials reports whether from reaches to's helper.
func dials(from, to *netns.Host) bool {
	cmd := from.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FERRY_NETNS_HELPER=dial:"+net.JoinHostPort(to.Addr, port))
	return cmd.Run() == nil
}

// Three hosts: every one reaches every other and the test reaches each;
// Cut, CutOneWay, Partition and Down take away exactly the links they
// name, Heal and Up give them back, and Close kills what runs inside and
// leaves no namespace, veth or bridge behind.
func TestCutsAndCleanup(t *testing.T) {
	n := netns.Require(t)
	a, b, c := n.Host(t, "a"), n.Host(t, "b"), n.Host(t, "c")
	hosts := []*netns.Host{a, b, c}
	var helpers []*exec.Cmd
	for _, h := range hosts {
		helpers = append(helpers, listen(t, h))
	}
	expect := func(step string, want map[[2]*netns.Host]bool) {
		t.Helper()
		for _, from := range hosts {
			for _, to := range hosts {
				if from == to {
					continue
				}
				if got := dials(from, to); got != want[[2]*netns.Host{from, to}] {
					t.Errorf("%s: %s reaches %s: %v, want %v (cuts: %s)", step, from, to, got, !got, n.Cuts())
				}
			}
		}
	}
	all := func(except ...[2]*netns.Host) map[[2]*netns.Host]bool {
		m := map[[2]*netns.Host]bool{}
		for _, x := range hosts {
			for _, y := range hosts {
				m[[2]*netns.Host{x, y}] = true
			}
		}
		for _, e := range except {
			m[e] = false
		}
		return m
	}
	expect("start", all())

	must(t, n.Cut(a, b))
	expect("cut a-b", all([2]*netns.Host{a, b}, [2]*netns.Host{b, a}))
	for _, h := range hosts {
		if !reachable(net.JoinHostPort(h.Addr, port)) {
			t.Errorf("the test does not reach %s during a cut between hosts", h)
		}
	}
	must(t, n.Heal())
	expect("healed", all())

	// a's packets to b are dropped: a's connection to b gets no answer,
	// and b's to a gets no answer either (its SYN-ACK never arrives).
	must(t, n.CutOneWay(a, b))
	expect("one way a→b", all([2]*netns.Host{a, b}, [2]*netns.Host{b, a}))
	must(t, n.Heal())

	must(t, n.Partition([]*netns.Host{a}))
	expect("{a} | {b, c}", all([2]*netns.Host{a, b}, [2]*netns.Host{b, a}, [2]*netns.Host{a, c}, [2]*netns.Host{c, a}))
	must(t, n.Heal())

	must(t, c.Down())
	if reachable(net.JoinHostPort(c.Addr, port)) {
		t.Error("the test reaches a host whose link is down")
	}
	expect("c down", all([2]*netns.Host{a, c}, [2]*netns.Host{c, a}, [2]*netns.Host{b, c}, [2]*netns.Host{c, b}))
	must(t, c.Up())
	harness.WaitFor(t, "the test reaches c again", 10*time.Second, func() bool { return reachable(net.JoinHostPort(c.Addr, port)) })
	expect("c up", all())

	must(t, n.Close())
	for _, cmd := range helpers {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("helper %d still runs after Close", cmd.Process.Pid)
		}
	}
	out, _ := exec.Command("ip", "-o", "link").Output()
	ns, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out)+string(ns), "fy"+n.ID) {
		t.Errorf("after Close, links or namespaces of %s remain:\n%s\n%s", n.ID, out, ns)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
