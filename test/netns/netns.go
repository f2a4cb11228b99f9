// Package netns makes hosts for tests out of Linux network namespaces, by
// the recipe in /work/shared/TESTING.md ("Network partitions"): one bridge
// in the root namespace with a private, randomly chosen 10.x.y.0/24, one
// namespace per host joined to it by a veth pair, and nftables rules inside
// the namespaces to cut and heal links between hosts. The test process
// stays in the root namespace and reaches every host through the bridge
// (its own address there is Gateway); cuts are between hosts only, so
// clients in the test keep reaching every host unless a host's link is
// taken down (Host.Down).
//
// Every name carries a per-run id (bridge fy<id>br, namespaces
// fy<id>-<host>, veths fy<id>v<n>), and Close removes all of it: it kills
// every process left inside the namespaces (by PID, `ip netns pids`),
// deletes the namespaces, which takes their veth pairs with them, and then
// the bridge. A run that died before its Close is cleaned up by the next
// New (its owner file under /run/ferry-netns names a dead PID). Nothing
// outside the bridge and the namespaces is touched.
//
// A cut drops packets on the receiving side (an nftables input chain in the
// receiver's namespace), so the sender sees what a real partition gives
// it: a connect or a write that goes unanswered, not an error.
//
// Needs root, iproute2 (`ip`) and nftables (`nft`);
// scripts/install-test-deps.sh installs the tools. Require fails the test
// under CI when a network cannot be made, and skips it elsewhere, with the
// reason (harness.RequireService).
package netns

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ferry-mq/ferry/test/harness"
)

// ownerDir holds one file per live network, named by its id and holding
// the owning process's PID, so a later run can remove what a crashed one
// left behind.
const ownerDir = "/run/ferry-netns"

// Network is one bridge and the hosts on it.
type Network struct {
	ID     string // per-run id, in every name this network makes
	Bridge string // the bridge's interface name
	prefix netip.Prefix

	mu      sync.Mutex
	hosts   []*Host
	nextIP  int               // the last octet of the next host
	dropped map[[2]*Host]bool // {from, to}: packets from → to are dropped
	applied map[*Host]string  // the ruleset last written to each host
	closed  bool
}

// Host is one network namespace on the bridge.
type Host struct {
	Name string // as given to AddHost
	NS   string // the namespace's name
	Addr string // its address on the bridge
	veth string // the root namespace's end of its veth pair
	net  *Network
}

// Require makes a network for t, removed by t's cleanup; it fails the test
// under CI and skips it elsewhere when one cannot be made.
func Require(t testing.TB) *Network {
	t.Helper()
	n, err := New()
	harness.RequireService(t, "network namespaces (root, ip, nft)", err)
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("netns: %v", err)
		}
	})
	return n
}

// Usable reports why networks cannot be made here, or nil.
func Usable() error {
	if os.Geteuid() != 0 {
		return errors.New("not root: network namespaces need CAP_NET_ADMIN")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("no %s on PATH (scripts/install-test-deps.sh installs iproute2 and nftables): %w", tool, err)
		}
	}
	return nil
}

// New makes a bridge on a free private /24 and brings it up; Close
// removes it and every host.
func New() (*Network, error) {
	if err := Usable(); err != nil {
		return nil, err
	}
	removeOrphans()
	id := randomHex(3)
	prefix, err := freePrefix()
	if err != nil {
		return nil, err
	}
	n := &Network{ID: id, Bridge: "fy" + id + "br", prefix: prefix, nextIP: 2,
		dropped: map[[2]*Host]bool{}, applied: map[*Host]string{}}
	if err := os.MkdirAll(ownerDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(ownerDir, id), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	err = run("ip", "link", "add", n.Bridge, "type", "bridge")
	if err == nil {
		err = run("ip", "addr", "add", n.Gateway()+"/24", "dev", n.Bridge)
	}
	if err == nil {
		err = run("ip", "link", "set", n.Bridge, "up")
	}
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("make bridge %s on %s: %w", n.Bridge, prefix, err)
	}
	return n, nil
}

// Gateway is the root namespace's address on the bridge: where the test
// process's connections to hosts come from.
func (n *Network) Gateway() string { return n.addr(1) }

// Prefix is the network's /24.
func (n *Network) Prefix() netip.Prefix { return n.prefix }

func (n *Network) addr(last int) string {
	a := n.prefix.Addr().As4()
	a[3] = byte(last)
	return netip.AddrFrom4(a).String()
}

// AddHost makes a namespace with loopback up and one interface, eth0, on
// the bridge at the next free address.
func (n *Network) AddHost(name string) (*Host, error) {
	n.mu.Lock()
	if n.closed || n.nextIP > 254 {
		n.mu.Unlock()
		return nil, errors.New("netns: network closed or full")
	}
	num := n.nextIP
	n.nextIP++
	h := &Host{Name: name, NS: "fy" + n.ID + "-" + name, Addr: n.addr(num),
		veth: fmt.Sprintf("fy%sv%d", n.ID, num), net: n}
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	peer := fmt.Sprintf("fy%sp%d", n.ID, num)
	steps := [][]string{
		{"ip", "netns", "add", h.NS},
		{"ip", "link", "add", h.veth, "type", "veth", "peer", "name", peer},
		{"ip", "link", "set", peer, "netns", h.NS},
		{"ip", "link", "set", h.veth, "master", n.Bridge},
		{"ip", "link", "set", h.veth, "up"},
		{"ip", "-n", h.NS, "link", "set", "lo", "up"},
		{"ip", "-n", h.NS, "link", "set", peer, "name", "eth0"},
		{"ip", "-n", h.NS, "addr", "add", h.Addr + "/24", "dev", "eth0"},
		{"ip", "-n", h.NS, "link", "set", "eth0", "up"},
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			return nil, fmt.Errorf("make host %s: %w", name, err)
		}
	}
	return h, nil
}

// Host is AddHost for a test, failing it on an error; the host goes with
// the network (or with RemoveHost).
func (n *Network) Host(t testing.TB, name string) *Host {
	t.Helper()
	h, err := n.AddHost(name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// RemoveHost kills the processes inside h and deletes its namespace.
func (n *Network) RemoveHost(h *Host) error {
	n.mu.Lock()
	i := slices.Index(n.hosts, h)
	if i >= 0 {
		n.hosts = slices.Delete(n.hosts, i, i+1)
	}
	for k := range n.dropped {
		if k[0] == h || k[1] == h {
			delete(n.dropped, k)
		}
	}
	delete(n.applied, h)
	n.mu.Unlock()
	if i < 0 {
		return nil
	}
	return h.remove()
}

// remove kills the processes inside h, deletes its veth pair (the kernel
// deletes a namespace's interfaces only some time after the namespace)
// and its namespace.
func (h *Host) remove() error {
	err := killAll(h.NS)
	if linkExists(h.veth) {
		err = errors.Join(err, run("ip", "link", "del", h.veth))
	}
	return errors.Join(err, removeNamespace(h.NS))
}

// Close removes every host (killing what runs inside) and the bridge.
func (n *Network) Close() error {
	n.mu.Lock()
	n.closed = true
	hosts := n.hosts
	n.hosts = nil
	n.mu.Unlock()
	var errs []error
	for _, h := range hosts {
		errs = append(errs, h.remove())
	}
	if linkExists(n.Bridge) {
		errs = append(errs, run("ip", "link", "del", n.Bridge))
	}
	os.Remove(filepath.Join(ownerDir, n.ID))
	return errors.Join(errs...)
}

// Wrap is the command prefix that runs a program inside h.
func (h *Host) Wrap() []string { return []string{"ip", "netns", "exec", h.NS} }

// Command is exec.Command for a program run inside h. `ip netns exec`
// execs the program in its own place, so the process's PID is the
// program's: signals sent to cmd.Process reach it.
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	w := h.Wrap()
	return exec.Command(w[0], append(append(w[1:], name), args...)...)
}

// Down takes h's link down: h is cut from everyone, the test's clients
// included, and its connections see no answer. Up brings it back.
func (h *Host) Down() error { return run("ip", "link", "set", h.veth, "down") }

// Up brings h's link back up.
func (h *Host) Up() error { return run("ip", "link", "set", h.veth, "up") }

// String is the host's name and address, for logs.
func (h *Host) String() string { return h.Name + "(" + h.Addr + ")" }

func run(args ...string) error {
	var out bytes.Buffer
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

func linkExists(name string) bool {
	return exec.Command("ip", "link", "show", "dev", name).Run() == nil
}

// killAll kills every process inside ns by PID.
func killAll(ns string) error {
	if !namespaceExists(ns) {
		return nil
	}
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return fmt.Errorf("ip netns pids %s: %w", ns, err)
	}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGCONT) // a frozen process dies too
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return nil
}

// removeNamespace kills every process inside ns, then deletes it.
func removeNamespace(ns string) error {
	if !namespaceExists(ns) {
		return nil
	}
	return errors.Join(killAll(ns), run("ip", "netns", "del", ns))
}

func namespaceExists(ns string) bool {
	_, err := os.Stat(filepath.Join("/run/netns", ns))
	return err == nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// freePrefix picks a random 10.x.y.0/24 that no address or route of the
// root namespace overlaps.
func freePrefix() (netip.Prefix, error) {
	used, err := usedPrefixes()
	if err != nil {
		return netip.Prefix{}, err
	}
	for range 100 {
		b := make([]byte, 2)
		rand.Read(b)
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 100 + b[0]%150, b[1], 0}), 24)
		if !slices.ContainsFunc(used, p.Overlaps) {
			return p, nil
		}
	}
	return netip.Prefix{}, errors.New("netns: no free 10.x.y.0/24")
}

// usedPrefixes lists the root namespace's IPv4 routes and addresses (all
// tables), default routes left out.
func usedPrefixes() ([]netip.Prefix, error) {
	var used []netip.Prefix
	for _, cmd := range [][]string{{"ip", "-4", "route", "show", "table", "all"}, {"ip", "-4", "-o", "addr"}} {
		out, err := exec.Command(cmd[0], cmd[1:]...).Output()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(cmd, " "), err)
		}
		for _, f := range strings.Fields(string(out)) {
			if p, err := netip.ParsePrefix(f); err == nil {
				used = append(used, p.Masked())
			} else if a, err := netip.ParseAddr(f); err == nil && a.Is4() {
				used = append(used, netip.PrefixFrom(a, 32))
			}
		}
	}
	return used, nil
}

// removeOrphans removes the networks whose owning process is gone: the
// processes in their namespaces, the namespaces, the bridge.
func removeOrphans() {
	owners, _ := os.ReadDir(ownerDir)
	for _, o := range owners {
		id := o.Name()
		b, err := os.ReadFile(filepath.Join(ownerDir, id))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && syscall.Kill(pid, 0) == nil {
			continue // its owner runs
		}
		entries, _ := os.ReadDir("/run/netns")
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "fy"+id+"-") {
				removeNamespace(e.Name())
			}
		}
		links, _ := exec.Command("ip", "-o", "link").Output()
		for _, f := range strings.Fields(string(links)) {
			if name, _, _ := strings.Cut(f, "@"); strings.HasPrefix(name, "fy"+id+"v") {
				run("ip", "link", "del", name)
			}
		}
		if linkExists("fy" + id + "br") {
			run("ip", "link", "del", "fy"+id+"br")
		}
		os.Remove(filepath.Join(ownerDir, id))
	}
}
