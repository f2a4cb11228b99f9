package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
)

// kafkaACLs is kafka-acls.sh over `ferry acls`' implementation.
func kafkaACLs(args []string) error {
	t := newKafkaTool("kafka-acls.sh", "This tool helps to manage acls on kafka.", "command-config", false)
	spec := &kcli.ACLSpec{}
	registerACLFlags(t.fs, spec)
	for _, n := range aclFlagNames {
		t.add(n, "")
	}
	var add, remove, list, producer, consumer, idempotent, force bool
	var principals stringList
	t.flag(&add, "add", "Indicates you are trying to add ACLs.")
	t.flag(&remove, "remove", "Indicates you are trying to remove ACLs.")
	t.flag(&list, "list", "List ACLs for the specified resource, use --topic <topic> or --group <group> or --cluster to specify a resource.")
	t.flag(&producer, "producer", "Convenience option to add/remove ACLs for producer role: WRITE, DESCRIBE and CREATE on topic.")
	t.flag(&consumer, "consumer", "Convenience option to add/remove ACLs for consumer role: READ and DESCRIBE on topic, READ on group.")
	t.flag(&idempotent, "idempotent", "Enable idempotence for the producer (with --producer).")
	t.flag(&force, "force", "Assume Yes to all queries and do not prompt.")
	t.list(&principals, "principal", "String: principal", "List ACLs for the specified principal (with --list).")
	if err := t.parse(args); err != nil {
		return err
	}
	if countTrue(add, remove, list) != 1 {
		return t.usage("Command must include exactly one action: --list, --add, --remove.")
	}
	if (producer || consumer) && len(spec.Operations) > 0 {
		return t.usage("Option \"[producer]\" or \"[consumer]\" can't be used with option \"[operation]\"")
	}
	specs, err := roleSpecs(spec, producer, consumer, idempotent)
	if err != nil {
		return t.usage("%v", err)
	}
	bootstrap, err := t.connect()
	if err != nil {
		return err
	}
	return withClient(bootstrap, func(ctx context.Context, cl *kgo.Client) error {
		switch {
		case add:
			return aclsAddKafka(ctx, cl, specs)
		case list:
			return aclsListKafka(ctx, cl, spec, principals)
		}
		return aclsRemoveKafka(ctx, cl, specs, force)
	})
}

// roleSpecs expands --producer and --consumer into the ACLs Kafka gives
// those roles; without them, the spec as given.
func roleSpecs(spec *kcli.ACLSpec, producer, consumer, idempotent bool) ([]kcli.ACLSpec, error) {
	if !producer && !consumer {
		return []kcli.ACLSpec{*spec}, nil
	}
	of := func(typ auth.ResourceType) []auth.Resource {
		var out []auth.Resource
		for _, r := range spec.Resources {
			if r.Type == typ {
				out = append(out, r)
			}
		}
		return out
	}
	with := func(rs []auth.Resource, ops ...string) kcli.ACLSpec {
		s := *spec
		s.Resources, s.Operations = rs, ops
		return s
	}
	topics, groups := of(auth.ResourceTopic), of(auth.ResourceGroup)
	if len(topics) == 0 {
		return nil, fmt.Errorf("With --producer or --consumer you must specify a --topic")
	}
	var out []kcli.ACLSpec
	if producer {
		out = append(out, with(topics, "Write", "Describe", "Create"))
		if ids := of(auth.ResourceTransactionalID); len(ids) > 0 {
			out = append(out, with(ids, "Write", "Describe"))
		}
		if idempotent {
			out = append(out, with([]auth.Resource{{Type: auth.ResourceCluster, Name: auth.ClusterName}}, "IdempotentWrite"))
		}
	}
	if consumer {
		if len(groups) == 0 {
			return nil, fmt.Errorf("With --consumer you must specify a --group")
		}
		out = append(out, with(topics, "Read", "Describe"), with(groups, "Read"))
	}
	return out, nil
}

func aclsAddKafka(ctx context.Context, cl *kgo.Client, specs []kcli.ACLSpec) error {
	var all []acl.Binding
	for _, s := range specs {
		bs, err := s.Bindings()
		if err != nil {
			return err
		}
		all = append(all, bs...)
	}
	kcli.WriteBindingsHeaded(os.Stdout, "Adding ACLs for resource", all)
	fmt.Println()
	if err := kcli.CreateACLs(ctx, cl, all); err != nil {
		return err
	}
	return printCurrentACLs(ctx, cl, specs)
}

// printCurrentACLs lists the ACLs of the specs' resources, as kafka-acls.sh
// does after a change.
func printCurrentACLs(ctx context.Context, cl *kgo.Client, specs []kcli.ACLSpec) error {
	var all []acl.Binding
	seen := map[auth.Resource]bool{}
	for _, s := range specs {
		for _, r := range s.Resources {
			if seen[r] {
				continue
			}
			seen[r] = true
			f := kcli.ACLSpec{Resources: []auth.Resource{r}, PatternType: s.PatternType}
			filters, err := f.Filters()
			if err != nil {
				return err
			}
			bs, err := kcli.DescribeACLs(ctx, cl, filters)
			if err != nil {
				return err
			}
			all = append(all, bs...)
		}
	}
	kcli.WriteBindingsHeaded(os.Stdout, "Current ACLs for resource", all)
	fmt.Println()
	return nil
}

func aclsListKafka(ctx context.Context, cl *kgo.Client, spec *kcli.ACLSpec, principals stringList) error {
	filter := *spec
	filter.AllowPrincipals = append(filter.AllowPrincipals, principals...)
	filters, err := filter.Filters()
	if err != nil {
		return err
	}
	if len(principals) > 0 {
		// --principal matches allow and deny entries alike.
		deny := *spec
		deny.DenyPrincipals = append(deny.DenyPrincipals, principals...)
		more, err := deny.Filters()
		if err != nil {
			return err
		}
		filters = append(filters, more...)
	}
	bs, err := kcli.DescribeACLs(ctx, cl, filters)
	if err != nil {
		return err
	}
	kcli.WriteBindingsHeaded(os.Stdout, "Current ACLs for resource", bs)
	if len(bs) > 0 {
		fmt.Println()
	}
	return nil
}

func aclsRemoveKafka(ctx context.Context, cl *kgo.Client, specs []kcli.ACLSpec, force bool) error {
	for _, s := range specs {
		if len(s.Resources) == 0 {
			return fmt.Errorf("name the resources whose ACLs to remove (--topic, --group, --cluster, --transactional-id)")
		}
	}
	if !force && !confirm(fmt.Sprintf("Are you sure you want to remove ACLs: %s? (y/n)", describeSpecs(specs))) {
		return nil
	}
	for _, s := range specs {
		filters, err := s.Filters()
		if err != nil {
			return err
		}
		if _, err := kcli.DeleteACLs(ctx, cl, filters); err != nil {
			return err
		}
	}
	return printCurrentACLs(ctx, cl, specs)
}

func describeSpecs(specs []kcli.ACLSpec) string {
	var parts []string
	for _, s := range specs {
		for _, r := range s.Resources {
			parts = append(parts, fmt.Sprintf("%s:%s", r.Type, r.Name))
		}
	}
	return strings.Join(parts, ", ")
}

// confirm asks on stderr and reads a y from stdin.
func confirm(question string) bool {
	fmt.Fprintln(os.Stderr, question)
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	return strings.EqualFold(strings.TrimSpace(line), "y")
}
