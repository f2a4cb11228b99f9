package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ferry-mq/ferry/cmd/ferry/internal/kcli"
)

// withOptionalValue gives an option that jopt-simple lets stand alone
// its default value, since Go's flags always want one
// (kafka-console-producer.sh --compression-codec alone means gzip).
func withOptionalValue(args []string, name, def string) []string {
	out := make([]string, 0, len(args)+1)
	for i, a := range args {
		out = append(out, a)
		if a == "--"+name && (i+1 == len(args) || strings.HasPrefix(args[i+1], "--")) {
			out = append(out, def)
		}
	}
	return out
}

// expandMultiValue rewrites argparse's "--name a b c" (nargs +) into
// "--name a --name b --name c" for Go's flags.
func expandMultiValue(args []string, name string) []string {
	out := make([]string, 0, len(args))
	in := false
	for _, a := range args {
		switch {
		case a == "--"+name:
			in = true
			out = append(out, a)
			continue
		case strings.HasPrefix(a, "--"):
			in = false
		case in && len(out) > 0 && out[len(out)-1] != "--"+name:
			out = append(out, "--"+name)
		}
		out = append(out, a)
	}
	return out
}

// kafkaConsoleProducer is kafka-console-producer.sh: a record per line of
// stdin, to --bootstrap-server or the 0.8-era --broker-list.
func kafkaConsoleProducer(args []string) error {
	t := newKafkaTool("kafka-console-producer.sh", "This tool helps to read data from standard input and publish it to Kafka.", "", false)
	var (
		brokers, topic, codec, acks             string
		props                                   stringList
		sync                                    bool
		batchSize, lingerMs, timeoutMs, retries int64
	)
	acks = "-1"
	t.str(&brokers, "broker-list", "String: broker-list", "DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified. The broker list string in the form HOST1:PORT1,HOST2:PORT2.")
	t.str(&topic, "topic", "String: topic", "REQUIRED: The topic id to produce messages to.")
	t.flag(&sync, "sync", "If set message send requests to the brokers are synchronously, one at a time as they arrive.")
	t.str(&codec, "compression-codec", "String: compression-codec", "The compression codec: either 'none', 'gzip', 'snappy', 'lz4', or 'zstd'. If specified without value, then it defaults to 'gzip'.")
	t.str(&acks, "request-required-acks", "String: request required acks", "The required `acks` of the producer requests (default: -1).")
	t.num(&batchSize, "batch-size", "Integer: size", "Number of messages to send in a single batch if they are not being sent synchronously (accepted; batches are bounded by batch.size bytes).")
	t.num(&lingerMs, "timeout", "Long: timeout_ms", "If set and the producer is running in asynchronous mode, this gives the maximum amount of time a message will queue awaiting sufficient batch size (ms).")
	t.num(&timeoutMs, "request-timeout-ms", "Integer: request timeout ms", "The ack timeout of the producer requests.")
	t.num(&retries, "message-send-max-retries", "Integer", "Brokers can fail receiving the message for multiple reasons; this is the number of retries before the producer gives up.")
	t.list(&props, "property", "String: prop", "A mechanism to pass user-defined properties in the form key=value to the message reader: parse.key, key.separator, parse.headers, headers.delimiter, headers.separator, headers.key.separator, ignore.error, null.marker.")
	client := t.clientPropertyFlags("producer-property", "String: producer_prop", "A mechanism to pass user-defined properties in the form key=value to the producer.",
		"producer.config", "String: config file", "Producer config properties file (security.protocol, sasl.*, ssl.*, acks, compression.type).")
	if err := t.parse(withOptionalValue(args, "compression-codec", "gzip")); err != nil {
		return err
	}
	if topic == "" {
		return t.usage("Missing required argument \"[topic]\"")
	}
	cfg, bootstrap, err := client.read(t, brokerList(&brokers), `Missing required argument "[bootstrap-server]"`)
	if err != nil {
		return err
	}
	reader, err := propertyMap(props)
	if err != nil {
		return err
	}
	pc := kcli.ProduceConfig{Topic: topic, Partition: -1, Acks: acks, Compression: codec}
	if v, ok := cfg["acks"]; ok && !t.given("request-required-acks") {
		pc.Acks = v
	}
	if v, ok := cfg["compression.type"]; ok && codec == "" {
		pc.Compression = v
	}
	if lf, sep, err := lineFormat(reader); err != nil {
		return t.usage("%v", err)
	} else {
		pc.Lines, pc.KeySeparator = lf, sep
	}
	if _, err := kcli.ProducerOpts(pc.Acks, pc.Compression); err != nil {
		return err
	}
	// The old producer's flags are its properties by other names.
	for flag, key := range map[string]string{"timeout": "linger.ms", "request-timeout-ms": "request.timeout.ms", "message-send-max-retries": "retries"} {
		if v := t.fs.Lookup(flag).Value.String(); t.given(flag) {
			cfg[key] = v
		}
	}
	if pc.Opts, err = producerPropertyOpts(cfg); err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	_, err = kcli.Produce(ctx, bootstrap, pc, os.Stdin)
	return err
}

// lineFormat reads the console producer's line reader properties.
func lineFormat(p map[string]string) (kcli.LineFormat, string, error) {
	or := func(k, def string) string {
		if v, ok := p[k]; ok {
			return unescapeJava(v)
		}
		return def
	}
	f := kcli.LineFormat{
		ParseHeaders:     strings.EqualFold(p["parse.headers"], "true"),
		HeadersDelimiter: or("headers.delimiter", "\t"), HeadersSeparator: or("headers.separator", ","),
		HeaderKeySeparator: or("headers.key.separator", ":"),
		IgnoreError:        strings.EqualFold(p["ignore.error"], "true"),
	}
	if v, ok := p["null.marker"]; ok {
		f.NullMarker = &v
	}
	for _, sep := range []string{f.HeadersDelimiter, f.HeadersSeparator, f.HeaderKeySeparator} {
		if sep == "" {
			return f, "", fmt.Errorf("the header separators must not be empty")
		}
	}
	keySep := ""
	if strings.EqualFold(p["parse.key"], "true") {
		if keySep = or("key.separator", "\t"); keySep == "" {
			return f, "", fmt.Errorf("key.separator must not be empty")
		}
	}
	return f, keySep, nil
}

// kafkaConsoleConsumer is kafka-console-consumer.sh: records to stdout,
// formatted as Kafka's DefaultMessageFormatter does.
func kafkaConsoleConsumer(args []string) error {
	t := newKafkaTool("kafka-console-consumer.sh", "This tool helps to read data from Kafka topics and outputs it to standard output.", "", true)
	var (
		topic, include, whitelist, offset, group, isolation string
		partition, maxMessages, timeoutMs                   int64
		fromBeginning, skipErrors                           bool
		props                                               stringList
		formatter, keyDeser, valueDeser                     string
	)
	partition = -1
	t.str(&topic, "topic", "String: topic", "The topic to consume on.")
	t.str(&include, "include", "String: Java regex (String)", "Regular expression specifying list of topics to include for consumption.")
	t.str(&whitelist, "whitelist", "String: Java regex (String)", "DEPRECATED, use --include instead.")
	t.num(&partition, "partition", "Integer: partition", "The partition to consume from. Consumption starts from the end of the partition unless '--offset' is specified.")
	t.str(&offset, "offset", "String: consume offset", "The offset to consume from (a non-negative number), or 'earliest' which means from beginning, or 'latest' which means from end (default: latest).")
	t.flag(&fromBeginning, "from-beginning", "If the consumer does not already have an established offset to consume from, start with the earliest message present in the log rather than the latest message.")
	t.num(&maxMessages, "max-messages", "Integer: num_messages", "The maximum number of messages to consume before exiting. If not set, consumption is continual.")
	t.num(&timeoutMs, "timeout-ms", "Integer: timeout_ms", "If specified, exit if no message is available for consumption for the specified interval.")
	t.str(&group, "group", "String: consumer group id", "The consumer group id of the consumer.")
	t.list(&props, "property", "String: prop", "The properties to initialize the message formatter: print.timestamp, print.key, print.offset, print.partition, print.headers, print.value, key.separator, line.separator, headers.separator, null.literal.")
	client := t.clientPropertyFlags("consumer-property", "String: consumer_prop", "A mechanism to pass user-defined properties in the form key=value to the consumer.",
		"consumer.config", "String: config file", "Consumer config properties file (security.protocol, sasl.*, ssl.*, group.id).")
	t.str(&isolation, "isolation-level", "String", "Set to read_committed in order to filter out transactional messages which are not committed.")
	t.flag(&skipErrors, "skip-message-on-error", "If there is an error when processing a message, skip it instead of halt.")
	t.str(&formatter, "formatter", "String: class", "The name of a class to use for formatting Kafka messages for display (kafka.tools.DefaultMessageFormatter).")
	t.str(&keyDeser, "key-deserializer", "String: deserializer for key", "Ignored: keys are printed as bytes.")
	t.str(&valueDeser, "value-deserializer", "String: deserializer for values", "Ignored: values are printed as bytes.")
	if err := t.parse(args); err != nil {
		return err
	}
	if include == "" {
		include = whitelist
	}
	if (topic == "") == (include == "") {
		return t.usage("Exactly one of include/topic is required.")
	}
	if formatter != "" && !strings.HasSuffix(formatter, "DefaultMessageFormatter") {
		return fmt.Errorf("--formatter %s: ferry prints with the DefaultMessageFormatter only", formatter)
	}
	cfg, bootstrap, err := client.read(t, nil, "")
	if err != nil {
		return err
	}
	if group == "" {
		group = cfg["group.id"]
	}
	if isolation != "" {
		cfg["isolation.level"] = isolation
	}
	opts, err := consumerPropertyOpts(cfg)
	if err != nil {
		return err
	}
	if strings.EqualFold(cfg["auto.offset.reset"], "earliest") && group != "" && offset == "" {
		fromBeginning = true
	}
	formatProps, err := propertyMap(props)
	if err != nil {
		return err
	}
	cc := kcli.ConsumeConfig{Topic: topic, Group: group, Partition: int32(partition), Offset: offset,
		FromBeginning: fromBeginning, MaxMessages: maxMessages, IdleTimeout: time.Duration(timeoutMs) * time.Millisecond,
		Format: newMessageFormatter(formatProps).write, Opts: opts}
	if include != "" {
		cc.Topic, cc.TopicRegex = strings.ReplaceAll(include, ",", "|"), true
	}
	if partition >= 0 && offset == "" && !fromBeginning {
		cc.Offset = "latest"
	}
	if err := cc.Validate(); err != nil {
		return t.usage("%v", err)
	}
	ctx, stop := signalContext()
	defer stop()
	n, err := kcli.Consume(ctx, bootstrap, cc, os.Stdout)
	fmt.Fprintf(os.Stderr, "Processed a total of %d messages\n", n)
	return err
}

// messageFormatter is Kafka's DefaultMessageFormatter and its properties.
type messageFormatter struct {
	timestamp, key, offset, partition, headers, value bool
	keySep, lineSep, headersSep, nullLiteral          string
}

func newMessageFormatter(p map[string]string) *messageFormatter {
	on := func(k string, def bool) bool {
		v, ok := p[k]
		if !ok {
			return def
		}
		return strings.EqualFold(v, "true")
	}
	or := func(k, def string) string {
		if v, ok := p[k]; ok {
			return unescapeJava(v)
		}
		return def
	}
	return &messageFormatter{
		timestamp: on("print.timestamp", false), key: on("print.key", false), offset: on("print.offset", false),
		partition: on("print.partition", false), headers: on("print.headers", false), value: on("print.value", true),
		keySep: or("key.separator", "\t"), lineSep: or("line.separator", "\n"),
		headersSep: or("headers.separator", ","), nullLiteral: or("null.literal", "null"),
	}
}

// unescapeJava reads the escapes a shell user types for separators
// ("\t", "\n"), as Kafka's formatter does.
func unescapeJava(s string) string {
	if u, err := strconv.Unquote(`"` + strings.ReplaceAll(s, `"`, `\"`) + `"`); err == nil {
		return u
	}
	return s
}

func (f *messageFormatter) write(w *bufio.Writer, r *kgo.Record) {
	var fields []string
	if f.timestamp {
		typ := "CreateTime"
		if r.Attrs.TimestampType() == 1 {
			typ = "LogAppendTime"
		}
		fields = append(fields, fmt.Sprintf("%s:%d", typ, r.Timestamp.UnixMilli()))
	}
	if f.partition {
		fields = append(fields, fmt.Sprintf("Partition:%d", r.Partition))
	}
	if f.offset {
		fields = append(fields, fmt.Sprintf("Offset:%d", r.Offset))
	}
	if f.headers {
		fields = append(fields, f.formatHeaders(r.Headers))
	}
	if f.key {
		fields = append(fields, f.bytes(r.Key))
	}
	if f.value {
		fields = append(fields, f.bytes(r.Value))
	}
	w.WriteString(strings.Join(fields, f.keySep))
	w.WriteString(f.lineSep)
}

func (f *messageFormatter) bytes(b []byte) string {
	if b == nil {
		return f.nullLiteral
	}
	return string(b)
}

func (f *messageFormatter) formatHeaders(hs []kgo.RecordHeader) string {
	if len(hs) == 0 {
		return "NO_HEADERS"
	}
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.Key + ":" + f.bytes(h.Value)
	}
	return strings.Join(parts, f.headersSep)
}
