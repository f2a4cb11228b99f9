package main

// Kafka's command-line scripts, as names of this one binary: `make build`
// links kafka-topics.sh and the rest to bin/ferry, and main dispatches on
// the name the binary is run as. Each script is a flag front end in
// Kafka 3.9's terms (and the 0.8-era --zookeeper and --broker-list of old
// runbooks) over the operation the ferry subcommands already run, so an
// operation has one implementation whichever name reaches it.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
	"github.com/ferry-mq/ferry/replication/zookeeper"
	"github.com/ferry-mq/ferry/server"
)

// kafkaScripts maps each script name to its front end.
var kafkaScripts = map[string]func([]string) error{
	"kafka-topics.sh":                     kafkaTopics,
	"kafka-console-producer.sh":           kafkaConsoleProducer,
	"kafka-console-consumer.sh":           kafkaConsoleConsumer,
	"kafka-consumer-groups.sh":            kafkaConsumerGroups,
	"kafka-reassign-partitions.sh":        kafkaReassignPartitions,
	"kafka-preferred-replica-election.sh": kafkaPreferredReplicaElection,
	"kafka-leader-election.sh":            kafkaLeaderElection,
	"kafka-configs.sh":                    kafkaConfigs,
	"kafka-acls.sh":                       kafkaACLs,
	"kafka-get-offsets.sh":                kafkaGetOffsets,
	"kafka-delete-records.sh":             kafkaDeleteRecords,
	"kafka-log-dirs.sh":                   kafkaLogDirs,
	"kafka-dump-log.sh":                   kafkaDumpLog,
	"kafka-producer-perf-test.sh":         kafkaProducerPerfTest,
	"kafka-consumer-perf-test.sh":         kafkaConsumerPerfTest,
	"kafka-transactions.sh":               kafkaTransactions,
	"kafka-features.sh":                   kafkaFeatures,
}

// kafkaScriptNames are the script names, sorted.
func kafkaScriptNames() []string {
	names := make([]string, 0, len(kafkaScripts))
	for n := range kafkaScripts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// runKafkaScript runs the script named by argv[0], if it is one.
func runKafkaScript(argv0 string, args []string) bool {
	name := filepath.Base(argv0)
	run, ok := kafkaScripts[name]
	if !ok {
		return false
	}
	kcli.UnreachableHint = "is a broker listening there? check --bootstrap-server"
	exitKafka(run(args))
	return true
}

// runInstallScripts is `ferry install-scripts DIR`: a symbolic link per
// Kafka script name in DIR, to this binary beside them (make build).
func runInstallScripts(args []string) error {
	fs := flag.NewFlagSet("ferry install-scripts DIR", flag.ContinueOnError)
	target := fs.String("target", "ferry", "what the links point to, relative to DIR")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "one DIR"); err != nil {
		return err
	}
	for _, name := range kafkaScriptNames() {
		link := filepath.Join(pos[0], name)
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err := os.Symlink(*target, link); err != nil {
			return err
		}
	}
	return nil
}

// kafkaError is an error a script prints as Kafka's does: the message
// as is, to stdout for the tools that print there.
type kafkaError struct {
	msg    string
	stdout bool
}

func (e *kafkaError) Error() string { return e.msg }

// kafkaUsageError is a command-line mistake: Kafka prints the message
// and the options, and exits 1.
type kafkaUsageError struct {
	msg  string
	tool *kafkaTool
}

func (e *kafkaUsageError) Error() string { return e.msg }

// exitKafka ends the process as Kafka's tools do: 0 for success or help,
// 1 with the message for anything else.
func exitKafka(err error) {
	var ue *kafkaUsageError
	var ke *kafkaError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.As(err, &ue):
		fmt.Fprintln(os.Stderr, ue.msg)
		ue.tool.printUsage(os.Stderr)
	case errors.As(err, &ke) && ke.msg == "":
		// already reported
	case errors.As(err, &ke) && ke.stdout:
		fmt.Println(ke.msg)
	case errors.As(err, &ke):
		fmt.Fprintln(os.Stderr, ke.msg)
	default:
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
	}
	os.Exit(1)
}

// kafkaTool is one script's flags: Kafka's connection options and its own.
type kafkaTool struct {
	name, about string
	fs          *flag.FlagSet
	// order keeps the options in the order Kafka's help lists them.
	order []string
	meta  map[string]string // option -> its argument's name in help

	bootstrap, commandConfig, zookeeper string
	version                             bool
}

// newKafkaTool makes a script's flag set with --bootstrap-server and
// --command-config (configName: Kafka's name for the latter, which some
// tools call --admin.config or --producer.config); withZK adds the
// 0.8-era --zookeeper.
func newKafkaTool(name, about, configName string, withZK bool) *kafkaTool {
	t := &kafkaTool{name: name, about: about, fs: flag.NewFlagSet(name, flag.ContinueOnError), meta: map[string]string{}}
	t.fs.SetOutput(io.Discard)
	t.str(&t.bootstrap, "bootstrap-server", "server(s) to use for bootstrapping", "REQUIRED: The Kafka server to connect to, host:port[,host:port…].")
	if configName != "" {
		t.str(&t.commandConfig, configName, "command config property file",
			"Property file with the client's security settings (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.*, ssl.keystore.* in PEM).")
	}
	if withZK {
		t.str(&t.zookeeper, "zookeeper", "hosts", "The ZooKeeper connection string, host:port[,host:port…][/chroot]: the brokers registered under /brokers/ids are used to bootstrap (instead of --bootstrap-server).")
	}
	t.flag(&t.version, "version", "Display Kafka version.")
	return t
}

func (t *kafkaTool) add(name, meta string) {
	t.order = append(t.order, name)
	if meta != "" {
		t.meta[name] = meta
	}
}

func (t *kafkaTool) str(p *string, name, meta, usage string) {
	t.fs.StringVar(p, name, *p, usage)
	t.add(name, meta)
}

func (t *kafkaTool) num(p *int64, name, meta, usage string) {
	t.fs.Int64Var(p, name, *p, usage)
	t.add(name, meta)
}

func (t *kafkaTool) flag(p *bool, name, usage string) {
	t.fs.BoolVar(p, name, *p, usage)
	t.add(name, "")
}

func (t *kafkaTool) list(p *stringList, name, meta, usage string) {
	t.fs.Var(p, name, usage)
	t.add(name, meta)
}

// parse reads args; -h and --help print the usage on stdout (exit 0).
func (t *kafkaTool) parse(args []string) error {
	err := t.fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		t.printUsage(os.Stdout)
		return err
	}
	if err != nil {
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			msg = strings.TrimPrefix(name, "-") + " is not a recognized option"
		}
		return t.usage("%s", msg)
	}
	if t.fs.NArg() > 0 {
		return t.usage("Found non-option argument(s): %s", strings.Join(t.fs.Args(), " "))
	}
	if t.version {
		fmt.Println("ferry", version, "(Kafka 3.9 tools' options)")
		return flag.ErrHelp
	}
	return nil
}

func (t *kafkaTool) usage(format string, args ...any) error {
	return &kafkaUsageError{msg: fmt.Sprintf(format, args...), tool: t}
}

// given reports whether the option was on the command line.
func (t *kafkaTool) given(name string) bool {
	found := false
	t.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// printUsage prints the options as jopt-simple lays them out.
func (t *kafkaTool) printUsage(w io.Writer) {
	fmt.Fprintln(w, t.about)
	fmt.Fprintf(w, "%-40s %s\n%-40s %s\n", "Option", "Description", "------", "-----------")
	help := append(slices.Clone(t.order), "help")
	sort.Strings(help)
	for _, name := range help {
		opt := "--" + name
		usage := "Print usage information."
		if f := t.fs.Lookup(name); f != nil {
			usage = f.Usage
		}
		if m := t.meta[name]; m != "" {
			opt += " <" + m + ">"
		}
		if len(opt) > 40 {
			fmt.Fprintln(w, opt)
			opt = ""
		}
		fmt.Fprintf(w, "%-40s %s\n", opt, usage)
	}
}

// connect loads --command-config into the client settings and returns
// the bootstrap servers: --bootstrap-server, or the brokers registered in
// ZooKeeper for --zookeeper.
func (t *kafkaTool) connect() (string, error) {
	_, bootstrap, err := (&clientProperties{file: t.commandConfig}).read(t, nil, "")
	return bootstrap, err
}

func (t *kafkaTool) bootstrapFrom(props map[string]string, bootstrap string) (string, error) {
	protocol, err := applyClientProperties(props)
	if err != nil {
		return "", err
	}
	switch {
	case bootstrap != "" && t.zookeeper != "":
		return "", t.usage("Only one of --bootstrap-server or --zookeeper must be specified")
	case bootstrap != "":
		return bootstrap, nil
	case t.zookeeper != "":
		return bootstrapFromZooKeeper(t.zookeeper, protocol)
	case t.fs.Lookup("zookeeper") != nil:
		return "", t.usage("Missing required argument \"[bootstrap-server]\" (or --zookeeper)")
	}
	return "", t.usage("Missing required argument \"[bootstrap-server]\"")
}

// bootstrapFromZooKeeper finds the brokers as Kafka 0.8's tools did: the
// registrations under /brokers/ids of the ZooKeeper at connect, each
// broker's endpoint of the given security protocol.
func bootstrapFromZooKeeper(connect, protocol string) (string, error) {
	zk, err := zookeeper.Open(connect, 10*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		return "", fmt.Errorf("--zookeeper %s: %w", connect, err)
	}
	defer zk.Close()
	brokers, err := zk.Brokers()
	if err != nil {
		return "", fmt.Errorf("--zookeeper %s: read /brokers/ids: %w", connect, err)
	}
	var addrs []string
	for _, b := range brokers {
		for _, e := range b.Endpoints {
			if e.SecurityProtocol == protocol {
				addrs = append(addrs, fmt.Sprintf("%s:%d", e.Host, e.Port))
				break
			}
		}
	}
	if len(addrs) == 0 {
		return "", fmt.Errorf("--zookeeper %s: no live broker with a %s listener is registered under /brokers/ids (%d brokers)", connect, protocol, len(brokers))
	}
	return strings.Join(addrs, ","), nil
}

// maxPropertiesFile bounds a client properties file.
const maxPropertiesFile = 1 << 20

// loadClientProperties reads a Java properties file (none: empty).
func loadClientProperties(path string) (map[string]string, error) {
	if path == "" {
		return map[string]string{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	props, err := server.ParseProperties(io.LimitReader(f, maxPropertiesFile))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return props, nil
}

// applyClientProperties sets the client's TLS and SASL settings from a
// Kafka client config and returns its security.protocol.
func applyClientProperties(props map[string]string) (string, error) {
	protocol := strings.ToUpper(props["security.protocol"])
	if protocol == "" {
		protocol = "PLAINTEXT"
	}
	switch protocol {
	case "PLAINTEXT":
	case "SSL", "SASL_SSL", "SASL_PLAINTEXT":
	default:
		return "", fmt.Errorf("security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", props["security.protocol"])
	}
	if strings.HasSuffix(protocol, "SSL") {
		if err := applySSLProperties(props); err != nil {
			return "", err
		}
	}
	if strings.HasPrefix(protocol, "SASL") {
		if err := applySASLProperties(props); err != nil {
			return "", err
		}
	}
	return protocol, nil
}

func applySASLProperties(props map[string]string) error {
	mech := props["sasl.mechanism"]
	if mech == "" {
		mech = "GSSAPI" // Kafka's default
	}
	switch strings.ToUpper(mech) {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		return fmt.Errorf("sasl.mechanism %s: ferry speaks PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", mech)
	}
	jaas := props["sasl.jaas.config"]
	if jaas == "" {
		return errors.New("sasl.jaas.config is needed with a SASL security.protocol (… required username=\"u\" password=\"p\";)")
	}
	entry, err := parseJAAS(jaas)
	if err != nil {
		return err
	}
	user, pass := entry.options["username"], entry.options["password"]
	if user == "" || pass == "" {
		return errors.New("sasl.jaas.config: username and password are needed")
	}
	kcli.DefaultAuth = kcli.Auth{Mechanism: mech, User: user, Password: pass}
	return nil
}

// applySSLProperties reads the PEM forms of Kafka's SSL client settings;
// Java key stores (JKS, PKCS12) need Java to open.
func applySSLProperties(props map[string]string) error {
	kcli.TLS.Enable = true
	for _, store := range []string{"ssl.truststore", "ssl.keystore"} {
		typ := strings.ToUpper(props[store+".type"])
		if typ != "" && typ != "PEM" {
			return fmt.Errorf("%s.type %s: ferry reads PEM (%s.type=PEM)", store, typ, store)
		}
		if typ == "" && props[store+".location"] != "" && !strings.HasSuffix(strings.ToLower(props[store+".location"]), ".pem") {
			return fmt.Errorf("%s.location %s: ferry reads PEM; set %s.type=PEM", store, props[store+".location"], store)
		}
	}
	kcli.TLS.CAFile = props["ssl.truststore.location"]
	kcli.TLS.CAPEM = props["ssl.truststore.certificates"]
	if loc := props["ssl.keystore.location"]; loc != "" {
		// A PEM key store holds the key and its certificate chain.
		kcli.TLS.CertFile, kcli.TLS.KeyFile = loc, loc
	}
	kcli.TLS.CertPEM = props["ssl.keystore.certificate.chain"]
	kcli.TLS.KeyPEM = props["ssl.keystore.key"]
	if v, ok := props["ssl.endpoint.identification.algorithm"]; ok && v == "" {
		kcli.TLS.SkipHostname = true
	}
	return nil
}

// splitProperty cuts "key=value" (a --property or --config argument).
func splitProperty(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return "", "", fmt.Errorf("invalid property %q: want key=value", s)
	}
	return strings.TrimSpace(k), strings.TrimSpace(v), nil
}

// propertyMap turns repeated key=value arguments into a map.
func propertyMap(kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, err := splitProperty(kv)
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	return m, nil
}
