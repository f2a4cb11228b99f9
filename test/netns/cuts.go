package netns

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
)

// The cuts below change which packets between hosts are dropped; each
// host's nftables table is rewritten in one transaction, so a host never
// holds half of a change. Packets from and to the gateway (the test's
// clients) are never dropped by them.

// CutOneWay drops packets from `from` to `to`: `to` no longer hears
// `from`, while `from` still hears `to` (a TCP connection between them
// stalls either way, but datagrams and the direction of the first SYN
// differ).
func (n *Network) CutOneWay(from, to *Host) error {
	return n.change(func() { n.dropped[[2]*Host{from, to}] = true })
}

// Cut drops packets both ways between a and b.
func (n *Network) Cut(a, b *Host) error {
	return n.change(func() {
		n.dropped[[2]*Host{a, b}] = true
		n.dropped[[2]*Host{b, a}] = true
	})
}

// Isolate cuts h from every other host; clients still reach it.
func (n *Network) Isolate(h *Host) error {
	return n.Partition([]*Host{h})
}

// Partition cuts every host of a group from every host outside it, both
// ways. A host named in no group forms a group of its own with the others
// named in none: Partition({1}) is {1} | {everyone else}.
func (n *Network) Partition(groups ...[]*Host) error {
	return n.change(func() {
		group := map[*Host]int{}
		for i, g := range groups {
			for _, h := range g {
				group[h] = i + 1
			}
		}
		for _, a := range n.hosts {
			for _, b := range n.hosts {
				if a != b && group[a] != group[b] {
					n.dropped[[2]*Host{a, b}] = true
				}
			}
		}
	})
}

// Heal removes every cut (links taken Down stay down: Up them).
func (n *Network) Heal() error {
	return n.change(func() { clear(n.dropped) })
}

// Cuts describes the dropped directions, e.g. "b1→zk b2→b1", for logs.
func (n *Network) Cuts() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var s []string
	for k := range n.dropped {
		s = append(s, k[0].Name+"→"+k[1].Name)
	}
	slices.Sort(s)
	return strings.Join(s, " ")
}

// change applies edit to the dropped set and writes the ruleset of every
// host whose rules changed, all hosts at once: one nft run takes a few
// milliseconds, and a cut applied host after host would leave a window
// in which some links are cut and others not yet. It returns once every
// host's rules are in place.
func (n *Network) change(edit func()) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	edit()
	var wg sync.WaitGroup
	errs := make([]error, len(n.hosts))
	for i, h := range n.hosts {
		rules := n.rulesetFor(h)
		if n.applied[h] == rules {
			continue
		}
		wg.Go(func() { errs[i] = nft(h, rules) })
	}
	wg.Wait()
	for i, h := range n.hosts {
		if errs[i] == nil {
			n.applied[h] = n.rulesetFor(h)
		} else {
			delete(n.applied, h) // unknown: written again next time
		}
	}
	return errors.Join(errs...)
}

// rulesetFor is h's table: its input chain drops packets from every host
// whose packets to h are dropped. The table is added, deleted and made
// again in one nft transaction (adding first makes the delete valid when
// there was none). Expects n.mu held.
func (n *Network) rulesetFor(h *Host) string {
	var from []string
	for k := range n.dropped {
		if k[1] == h {
			from = append(from, k[0].Addr)
		}
	}
	slices.Sort(from)
	var b strings.Builder
	b.WriteString("add table inet ferry\ndelete table inet ferry\n")
	b.WriteString("table inet ferry {\n  chain input {\n    type filter hook input priority 0; policy accept;\n")
	if len(from) > 0 {
		fmt.Fprintf(&b, "    ip saddr { %s } drop\n", strings.Join(from, ", "))
	}
	b.WriteString("  }\n}\n")
	return b.String()
}

func nft(h *Host, ruleset string) error {
	cmd := exec.Command("ip", "netns", "exec", h.NS, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %w: %s\n%s", h.NS, err, strings.TrimSpace(string(out)), ruleset)
	}
	return nil
}
