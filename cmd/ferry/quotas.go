package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// runQuotas is `ferry quotas set|list|remove`: client quotas through a
// running broker (--bootstrap), with kafka-configs.sh's entity flags:
// --entity-type users|clients|ips, each followed by --entity-name N or
// --entity-default (an ip stands alone; the broker refuses it combined).
func runQuotas(args []string) error {
	return subcommand("quotas", args, map[string]func([]string) error{
		"set":    quotasSet,
		"list":   quotasList,
		"remove": quotasRemove,
	})
}

// quotaEntityFlags collects --entity-type/--entity-name/--entity-default
// in order: a name or default belongs to the type before it.
type quotaEntityFlags struct {
	components []kadm.ClientQuotaEntityComponent
	named      []bool // components[i] has a name or the default
	err        error
}

func (q *quotaEntityFlags) add(fs *flag.FlagSet) {
	fs.Func("entity-type", "users, clients (repeat for a user and a client id) or ips", func(s string) error {
		t, ok := map[string]string{"users": "user", "user": "user", "clients": "client-id", "client-id": "client-id", "ips": "ip", "ip": "ip"}[s]
		if !ok {
			return fmt.Errorf("%q: want users, clients or ips", s)
		}
		q.components = append(q.components, kadm.ClientQuotaEntityComponent{Type: t})
		q.named = append(q.named, false)
		return nil
	})
	name := func(n *string) error {
		if len(q.components) == 0 || q.named[len(q.named)-1] {
			return errors.New("give --entity-type before each --entity-name or --entity-default")
		}
		q.components[len(q.components)-1].Name = n
		q.named[len(q.named)-1] = true
		return nil
	}
	fs.Func("entity-name", "the entity's name (after its --entity-type)", func(s string) error { return name(&s) })
	fs.BoolFunc("entity-default", "the default entity (<default>) of the --entity-type before it", func(string) error { return name(nil) })
}

// entity is the entity to change: every type named or defaulted.
func (q *quotaEntityFlags) entity() (kadm.ClientQuotaEntity, error) {
	if len(q.components) == 0 {
		return nil, usageErr("give --entity-type users|clients|ips with --entity-name N or --entity-default")
	}
	if slices.Contains(q.named, false) {
		return nil, usageErr("each --entity-type needs --entity-name N or --entity-default")
	}
	return kadm.ClientQuotaEntity(q.components), nil
}

func quotasSet(args []string) error {
	fs, bootstrap := newClientFlags("quotas set")
	var ent quotaEntityFlags
	ent.add(fs)
	var add stringList
	fs.Var(&add, "add-config", "quotas to set, k=v[,k=v…]: producer_byte_rate, consumer_byte_rate, request_percentage; for ips connection_creation_rate (repeatable)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	var ops []kadm.AlterClientQuotaOp
	for _, kv := range splitQuotaList(add) {
		k, v, ok := strings.Cut(kv, "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return usageErr("--add-config %q: want key=number", kv)
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: f})
	}
	if len(ops) == 0 {
		return usageErr("give --add-config k=v")
	}
	return alterQuotas(*bootstrap, &ent, ops)
}

func quotasRemove(args []string) error {
	fs, bootstrap := newClientFlags("quotas remove")
	var ent quotaEntityFlags
	ent.add(fs)
	var del stringList
	fs.Var(&del, "delete-config", "quotas to remove, k[,k…] (repeatable)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	var ops []kadm.AlterClientQuotaOp
	for _, k := range splitQuotaList(del) {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
	}
	if len(ops) == 0 {
		return usageErr("give --delete-config k")
	}
	return alterQuotas(*bootstrap, &ent, ops)
}

func splitQuotaList(l stringList) []string {
	var out []string
	for _, s := range l {
		for _, part := range strings.Split(s, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

func alterQuotas(bootstrap string, ent *quotaEntityFlags, ops []kadm.AlterClientQuotaOp) error {
	if ent.err != nil {
		return ent.err
	}
	e, err := ent.entity()
	if err != nil {
		return err
	}
	return withAdmin(bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: e, Ops: ops}})
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				return fmt.Errorf("%s: %w: %s", describeEntity(r.Entity), r.Err, r.ErrMessage)
			}
			fmt.Printf("Completed updating quotas for %s.\n", describeEntity(r.Entity))
		}
		return nil
	})
}

func quotasList(args []string) error {
	fs, bootstrap := newClientFlags("quotas list")
	var ent quotaEntityFlags
	ent.add(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	var filter []kadm.DescribeClientQuotaComponent
	for i, c := range ent.components {
		fc := kadm.DescribeClientQuotaComponent{Type: c.Type, MatchType: kmsg.QuotasMatchTypeAny}
		switch {
		case ent.named[i] && c.Name != nil:
			fc.MatchType, fc.MatchName = kmsg.QuotasMatchTypeExact, c.Name
		case ent.named[i]:
			fc.MatchType = kmsg.QuotasMatchTypeDefault
		}
		filter = append(filter, fc)
	}
	return withAdmin(*bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		described, err := adm.DescribeClientQuotas(ctx, len(filter) > 0, filter)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
		for _, d := range described {
			var vals []string
			for _, v := range d.Values {
				vals = append(vals, v.Key+"="+strconv.FormatFloat(v.Value, 'f', -1, 64))
			}
			fmt.Fprintf(tw, "%s\t%s\n", describeEntity(d.Entity), strings.Join(vals, ","))
		}
		return tw.Flush()
	})
}

// describeEntity prints an entity as kafka-configs.sh names it.
func describeEntity(e kadm.ClientQuotaEntity) string {
	var parts []string
	for _, c := range e {
		name := "<default>"
		if c.Name != nil {
			name = *c.Name
		}
		t := map[string]string{"user": "user-principal", "client-id": "client-id"}[c.Type]
		if t == "" {
			t = c.Type
		}
		parts = append(parts, t+" '"+name+"'")
	}
	return strings.Join(parts, ", ")
}
