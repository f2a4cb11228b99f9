package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
	"github.com/ferry-mq/ferry/server/auth"
)

// runACLs is `ferry acls add|list|remove`, kafka-acls.sh's --add, --list
// and --remove over the Kafka protocol (CreateAcls, DescribeAcls,
// DeleteAcls).
func runACLs(args []string) error {
	return subcommand("acls", args, map[string]func([]string) error{
		"add":    aclsAdd,
		"list":   aclsList,
		"remove": aclsRemove,
	})
}

// aclFlags are kafka-acls.sh's flags.
func aclFlags(name string) (*flag.FlagSet, *string, *kcli.ACLSpec) {
	fs, bootstrap := newClientFlags("acls " + name)
	spec := &kcli.ACLSpec{}
	registerACLFlags(fs, spec)
	return fs, bootstrap, spec
}

// aclFlagNames are the options registerACLFlags adds, for help listings.
var aclFlagNames = []string{"allow-principal", "deny-principal", "allow-host", "deny-host", "operation",
	"topic", "group", "transactional-id", "subject", "cluster", "resource-pattern-type"}

// registerACLFlags adds kafka-acls.sh's principal, host, operation and
// resource flags to fs, filling spec.
func registerACLFlags(fs *flag.FlagSet, spec *kcli.ACLSpec) {
	fs.Var((*stringList)(&spec.AllowPrincipals), "allow-principal", "principal to allow, Type:Name like User:alice (repeatable; User:* for everyone)")
	fs.Var((*stringList)(&spec.DenyPrincipals), "deny-principal", "principal to deny (repeatable)")
	fs.Var((*stringList)(&spec.AllowHosts), "allow-host", "IP address the allowed principals connect from (repeatable; default *)")
	fs.Var((*stringList)(&spec.DenyHosts), "deny-host", "IP address the denied principals connect from (repeatable; default *)")
	fs.Var((*stringList)(&spec.Operations), "operation", "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite or All (repeatable; add defaults to All)")
	fs.Var(resourceFlag{spec, auth.ResourceTopic}, "topic", "topic name, or * for every topic (repeatable)")
	fs.Var(resourceFlag{spec, auth.ResourceGroup}, "group", "consumer group (repeatable)")
	fs.Var(resourceFlag{spec, auth.ResourceTransactionalID}, "transactional-id", "transactional id (repeatable)")
	fs.Var(resourceFlag{spec, auth.ResourceSubject}, "subject", "schema registry subject, ferry's own resource type (repeatable)")
	fs.BoolFunc("cluster", "the cluster itself", func(string) error {
		spec.Resources = append(spec.Resources, auth.Resource{Type: auth.ResourceCluster, Name: auth.ClusterName})
		return nil
	})
	fs.StringVar(&spec.PatternType, "resource-pattern-type", "", "literal or prefixed; list and remove also take any or match (default literal)")
}

// resourceFlag appends one resource of its type per use.
type resourceFlag struct {
	spec *kcli.ACLSpec
	typ  auth.ResourceType
}

func (f resourceFlag) String() string { return "" }
func (f resourceFlag) Set(name string) error {
	f.spec.Resources = append(f.spec.Resources, auth.Resource{Type: f.typ, Name: name})
	return nil
}

func aclsAdd(args []string) error {
	fs, bootstrap, spec := aclFlags("add")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	bs, err := spec.Bindings()
	if err != nil {
		return usageErr("%v", err)
	}
	return withClient(*bootstrap, func(ctx context.Context, cl *kgo.Client) error {
		if err := kcli.CreateACLs(ctx, cl, bs); err != nil {
			return err
		}
		fmt.Printf("Added %d ACLs:\n", len(bs))
		kcli.WriteBindings(os.Stdout, bs)
		return nil
	})
}

func aclsList(args []string) error {
	fs, bootstrap, spec := aclFlags("list")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	filters, err := spec.Filters()
	if err != nil {
		return usageErr("%v", err)
	}
	return withClient(*bootstrap, func(ctx context.Context, cl *kgo.Client) error {
		bs, err := kcli.DescribeACLs(ctx, cl, filters)
		if err != nil {
			return err
		}
		kcli.WriteBindings(os.Stdout, bs)
		return nil
	})
}

func aclsRemove(args []string) error {
	fs, bootstrap, spec := aclFlags("remove")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if len(spec.Resources) == 0 {
		return usageErr("name the resources whose ACLs to remove (--topic, --group, --cluster, --transactional-id, --subject)")
	}
	filters, err := spec.Filters()
	if err != nil {
		return usageErr("%v", err)
	}
	return withClient(*bootstrap, func(ctx context.Context, cl *kgo.Client) error {
		bs, err := kcli.DeleteACLs(ctx, cl, filters)
		fmt.Printf("Removed %d ACLs:\n", len(bs))
		if len(bs) > 0 {
			kcli.WriteBindings(os.Stdout, bs)
		}
		return err
	})
}

func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	return wantArgs(pos, 0, 0, "flags only")
}

// withClient runs fn with a Kafka client of bootstrap, bounded like
// withAdmin; the ACL APIs are spoken with kmsg, since kadm's builder has
// no way to name ferry's SUBJECT resources.
func withClient(bootstrap string, fn func(context.Context, *kgo.Client) error) error {
	ctx, cancel := adminContext()
	defer cancel()
	cl, err := kcli.Dial(ctx, bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	return fn(ctx, cl)
}
