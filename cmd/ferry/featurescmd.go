package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/features"
)

// runFeatures is `ferry features describe|upgrade|downgrade|disable`, as
// kafka-features.sh: the cluster's finalized features (KIP-584), read from
// ApiVersions and changed with UpdateFeatures.
func runFeatures(args []string) error {
	return subcommand("features", args, map[string]func([]string) error{
		"describe":  featuresDescribe,
		"upgrade":   func(a []string) error { return featuresChange("upgrade", a) },
		"downgrade": func(a []string) error { return featuresChange("downgrade", a) },
		"disable":   func(a []string) error { return featuresChange("disable", a) },
	})
}

func featuresDescribe(args []string) error {
	fs, bootstrap := newClientFlags("features describe")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	return withClient(*bootstrap, func(ctx context.Context, cl *kgo.Client) error {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "ferry-cli", version
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		writeFeatures(os.Stdout, resp)
		return nil
	})
}

// writeFeatures prints each supported feature as Kafka 3.9's
// kafka-features.sh describe does.
func writeFeatures(w io.Writer, resp *kmsg.ApiVersionsResponse) {
	finalized := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	epoch := "-"
	if resp.FinalizedFeaturesEpoch >= 0 {
		epoch = strconv.FormatInt(resp.FinalizedFeaturesEpoch, 10)
	}
	supported := slices.Clone(resp.SupportedFeatures)
	sort.Slice(supported, func(i, j int) bool { return supported[i].Name < supported[j].Name })
	for _, f := range supported {
		fmt.Fprintf(w, "Feature: %s\tSupportedMinVersion: %d\tSupportedMaxVersion: %d\tFinalizedVersionLevel: %d\tEpoch: %s\n",
			f.Name, f.MinVersion, f.MaxVersion, finalized[f.Name], epoch)
	}
}

// featureFlag is a repeatable --feature name=level.
type featureFlag []features.Update

func (f *featureFlag) String() string { return "" }

func (f *featureFlag) Set(v string) error {
	name, level, ok := strings.Cut(v, "=")
	n, err := strconv.ParseInt(strings.TrimSpace(level), 10, 16)
	if !ok || strings.TrimSpace(name) == "" || err != nil {
		return fmt.Errorf("%q: want feature=level, e.g. transaction.version=2", v)
	}
	*f = append(*f, features.Update{Name: strings.TrimSpace(name), Level: int16(n)})
	return nil
}

// featuresChange is upgrade, downgrade (--unsafe: an unsafe downgrade) and
// disable (--feature NAME, to level 0), with --dry-run as validate-only.
// Each feature's outcome is printed as Kafka's tool prints it; any failure
// fails the command.
func featuresChange(op string, args []string) error {
	fs, bootstrap := newClientFlags("features " + op)
	var updates featureFlag
	var names stringList
	if op == "disable" {
		fs.Var(&names, "feature", "a feature to disable (level 0); repeatable")
	} else {
		fs.Var(&updates, "feature", "a feature and its new level, e.g. transaction.version=2; repeatable")
	}
	unsafe := false
	if op != "upgrade" {
		fs.BoolVar(&unsafe, "unsafe", false, "an unsafe (lossy) downgrade")
	}
	dryRun := fs.Bool("dry-run", false, "validate only, change nothing")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, "no arguments"); err != nil {
		return err
	}
	for _, n := range names {
		updates = append(updates, features.Update{Name: n})
	}
	if len(updates) == 0 {
		return usageErr("at least one --feature is required")
	}
	typ := features.Upgrade
	if op != "upgrade" {
		typ = features.SafeDowngrade
		if unsafe {
			typ = features.UnsafeDowngrade
		}
	}
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.ValidateOnly, req.TimeoutMillis = *dryRun, 30000
	for _, u := range updates {
		fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		fu.Feature, fu.MaxVersionLevel, fu.UpgradeType, fu.AllowDowngrade = u.Name, u.Level, int8(typ), typ != features.Upgrade
		req.FeatureUpdates = append(req.FeatureUpdates, fu)
	}
	return withClient(*bootstrap, func(ctx context.Context, cl *kgo.Client) error {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return reportFeatureUpdates(os.Stdout, op, *dryRun, updates, resp)
	})
}

func reportFeatureUpdates(w io.Writer, op string, dryRun bool, updates []features.Update, resp *kmsg.UpdateFeaturesResponse) error {
	verb := map[string]string{"upgrade": "upgraded", "downgrade": "downgraded", "disable": "disabled"}[op]
	results := map[string]kmsg.UpdateFeaturesResponseResult{}
	for _, r := range resp.Results {
		results[r.Feature] = r
	}
	failed := 0
	for _, u := range updates {
		r, ok := results[u.Name]
		code, msg := r.ErrorCode, r.ErrorMessage
		if !ok || resp.ErrorCode != 0 {
			code, msg = resp.ErrorCode, resp.ErrorMessage
		}
		target := fmt.Sprintf("%s %s to %d", op, u.Name, u.Level)
		if op == "disable" {
			target = "disable " + u.Name
		}
		if code != 0 {
			failed++
			why := kerr.ErrorForCode(code).Error()
			if msg != nil {
				why = *msg
			}
			fmt.Fprintf(w, "Could not %s. %s\n", target, why)
			continue
		}
		switch {
		case dryRun && op == "disable":
			fmt.Fprintf(w, "%s can be disabled.\n", u.Name)
		case dryRun:
			fmt.Fprintf(w, "%s can be %s to %d.\n", u.Name, verb, u.Level)
		case op == "disable":
			fmt.Fprintf(w, "%s was disabled.\n", u.Name)
		default:
			fmt.Fprintf(w, "%s was %s to %d.\n", u.Name, verb, u.Level)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d out of %d operation(s) failed", failed, len(updates))
	}
	return nil
}

// kafkaFeatureCommands are kafka-features.sh's commands.
var kafkaFeatureCommands = []string{"describe", "upgrade", "downgrade", "disable"}

// kafkaFeatures is kafka-features.sh (Kafka 3.9): `--bootstrap-server B
// describe | upgrade --feature F=L… | downgrade --feature F=L… [--unsafe]
// | disable --feature F…` with --dry-run, over `ferry features`.
// --metadata and --release-version name metadata.version, which a
// ZooKeeper-era cluster does not finalize.
func kafkaFeatures(args []string) error {
	t := newKafkaTool("kafka-features.sh", "This tool manages feature flags in Kafka.", "command-config", false)
	at := slices.IndexFunc(args, func(a string) bool { return slices.Contains(kafkaFeatureCommands, a) })
	if at < 0 {
		if err := t.parse(args); err != nil {
			return err
		}
		return t.usage("Missing command: one of describe, upgrade, downgrade, disable")
	}
	if err := t.parse(args[:at]); err != nil {
		return err
	}
	rest := args[at+1:]
	for _, a := range rest {
		if name := strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-"); name == "metadata" || name == "release-version" {
			return t.usage("--%s is not supported: this cluster finalizes transaction.version only (use --feature transaction.version=N)", name)
		}
	}
	bootstrap, err := t.connect()
	if err != nil {
		return err
	}
	err = runFeatures(append([]string{args[at], "--bootstrap", bootstrap}, rest...))
	if err != nil && strings.Contains(err.Error(), "operation(s) failed") {
		return &kafkaError{msg: err.Error()}
	}
	return err
}
