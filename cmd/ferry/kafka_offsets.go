package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// kafkaGetOffsets is kafka-get-offsets.sh (GetOffsetShell): one
// topic:partition:offset line per partition.
func kafkaGetOffsets(args []string) error {
	t := newKafkaTool("kafka-get-offsets.sh", "An interactive shell for getting topic-partition offsets.", "command-config", false)
	var brokerList, topic, partitions, topicPartitions, at string
	var excludeInternal bool
	at = "-1"
	t.str(&brokerList, "broker-list", "String: HOST1:PORT1,...,HOST3:PORT3", "DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified.")
	t.str(&topic, "topic", "String: topic", "The topic to get the offsets for. It also accepts a regular expression. If not present, all authorized topics are queried. Cannot be used if --topic-partitions is present.")
	t.str(&partitions, "partitions", "String: partition ids", "Comma separated list of partition ids to get the offsets for. If not present, all partitions of the authorized topics are queried. Cannot be used if --topic-partitions is present.")
	t.str(&topicPartitions, "topic-partitions", "String: topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3", "Comma separated list of topic-partition patterns to get the offsets for, with the format of '([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?'.")
	t.str(&at, "time", "String: <timestamp> / -1 or latest / -2 or earliest / -3 or max-timestamp", "timestamp of the offsets before that. [Note: No offset is returned, if the timestamp greater than recently committed record timestamp is given.] (default: latest)")
	t.flag(&excludeInternal, "exclude-internal-topics", "By default, internal topics are included. If specified, internal topics are excluded.")
	if err := t.parse(args); err != nil {
		return err
	}
	if topicPartitions != "" && (topic != "" || partitions != "") {
		return t.usage("Option topic-partitions cannot be used with topic or partitions")
	}
	filters, err := offsetFilters(topic, partitions, topicPartitions)
	if err != nil {
		return t.usage("%v", err)
	}
	if t.bootstrap == "" {
		t.bootstrap = brokerList
	}
	bootstrap, err := t.connect()
	if err != nil {
		return err
	}
	return withAdmin(bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		all, err := adm.ListTopicsWithInternal(ctx)
		if err != nil {
			return err
		}
		var topics []string
		for _, d := range all {
			if d.Err == nil && !(excludeInternal && d.IsInternal) && anyTopicMatch(filters, d.Topic) {
				topics = append(topics, d.Topic)
			}
		}
		if len(topics) == 0 {
			return nil
		}
		listed, err := listOffsetsAt(ctx, adm, at, topics)
		if err != nil {
			return err
		}
		var lines []kadm.ListedOffset
		listed.Each(func(o kadm.ListedOffset) {
			if anyPartitionMatch(filters, o.Topic, o.Partition) {
				lines = append(lines, o)
			}
		})
		sort.Slice(lines, func(i, j int) bool {
			return lines[i].Topic < lines[j].Topic || lines[i].Topic == lines[j].Topic && lines[i].Partition < lines[j].Partition
		})
		for _, o := range lines {
			offset := ""
			if o.Err == nil && o.Offset >= 0 {
				offset = strconv.FormatInt(o.Offset, 10)
			}
			fmt.Printf("%s:%d:%s\n", o.Topic, o.Partition, offset)
		}
		return nil
	})
}

func listOffsetsAt(ctx context.Context, adm *kadm.Client, at string, topics []string) (kadm.ListedOffsets, error) {
	var listed kadm.ListedOffsets
	var err error
	switch strings.ToLower(at) {
	case "-1", "latest":
		listed, err = adm.ListEndOffsets(ctx, topics...)
	case "-2", "earliest":
		listed, err = adm.ListStartOffsets(ctx, topics...)
	case "-3", "max-timestamp":
		listed, err = adm.ListMaxTimestampOffsets(ctx, topics...)
	default:
		ms, perr := strconv.ParseInt(at, 10, 64)
		if perr != nil || ms < 0 {
			return nil, fmt.Errorf("Malformed time argument %s. Please use -1 or latest / -2 or earliest / -3 or max-timestamp, or a specified long format timestamp", at)
		}
		listed, err = adm.ListOffsetsAfterMilli(ctx, ms, topics...)
	}
	var se *kadm.ShardErrors
	if errors.As(err, &se) {
		err = nil // shown per partition
	}
	return listed, err
}

// offsetFilter is one topic-partition pattern of GetOffsetShell.
type offsetFilter struct {
	topic    *regexp.Regexp // nil: every topic
	from, to int32          // partition range, inclusive; to -1: open
	ids      map[int32]bool // explicit partitions (--partitions)
}

var topicPartitionPattern = regexp.MustCompile(`^([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?$`)

func offsetFilters(topic, partitions, topicPartitions string) ([]offsetFilter, error) {
	if topicPartitions == "" {
		f := offsetFilter{from: 0, to: -1}
		if topic != "" {
			re, err := regexp.Compile("^(?:" + topic + ")$")
			if err != nil {
				return nil, fmt.Errorf("--topic %q: %w", topic, err)
			}
			f.topic = re
		}
		if partitions != "" {
			f.ids = map[int32]bool{}
			for _, p := range strings.Split(partitions, ",") {
				n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("--partitions %q: %q is not a partition id", partitions, p)
				}
				f.ids[int32(n)] = true
			}
		}
		return []offsetFilter{f}, nil
	}
	var out []offsetFilter
	for _, spec := range strings.Split(topicPartitions, ",") {
		m := topicPartitionPattern.FindStringSubmatch(spec)
		if m == nil {
			return nil, fmt.Errorf("Invalid topic-partitions pattern: %s", spec)
		}
		f := offsetFilter{from: 0, to: -1}
		if m[1] != "" {
			re, err := regexp.Compile("^(?:" + m[1] + ")$")
			if err != nil {
				return nil, fmt.Errorf("--topic-partitions %q: %w", spec, err)
			}
			f.topic = re
		}
		num := func(s string, def int32) int32 {
			if n, err := strconv.ParseInt(s, 10, 32); err == nil {
				return int32(n)
			}
			return def
		}
		switch {
		case m[2] != "":
			f.from, f.to = num(m[2], 0), num(m[2], 0)
		case m[3] != "" || m[4] != "":
			// A range's upper bound is exclusive in GetOffsetShell.
			f.from, f.to = num(m[3], 0), num(m[4], 0)-1
			if m[4] == "" {
				f.to = -1
			}
		}
		out = append(out, f)
	}
	return out, nil
}

func anyTopicMatch(fs []offsetFilter, topic string) bool {
	for _, f := range fs {
		if f.topic == nil || f.topic.MatchString(topic) {
			return true
		}
	}
	return false
}

func anyPartitionMatch(fs []offsetFilter, topic string, p int32) bool {
	for _, f := range fs {
		if f.topic != nil && !f.topic.MatchString(topic) {
			continue
		}
		if f.ids != nil {
			if f.ids[p] {
				return true
			}
			continue
		}
		if p >= f.from && (f.to < 0 || p <= f.to) {
			return true
		}
	}
	return false
}

// maxOffsetFile bounds --offset-json-file.
const maxOffsetFile = 16 << 20

// kafkaDeleteRecords is kafka-delete-records.sh: moves each listed
// partition's log start offset up to the given offset (-1: its high
// watermark).
func kafkaDeleteRecords(args []string) error {
	t := newKafkaTool("kafka-delete-records.sh", "This tool helps to delete records of the given partitions down to the specified offset.", "command-config", false)
	var file string
	t.str(&file, "offset-json-file", "Offset json file path", "REQUIRED: The JSON file with offset per partition. The format to use is:\n{\"partitions\":\n  [{\"topic\": \"foo\", \"partition\": 1, \"offset\": 1}],\n \"version\":1\n}")
	if err := t.parse(args); err != nil {
		return err
	}
	if file == "" {
		return t.usage("Missing required argument \"[offset-json-file]\"")
	}
	offsets, err := readOffsetFile(file)
	if err != nil {
		return err
	}
	bootstrap, err := t.connect()
	if err != nil {
		return err
	}
	return withAdmin(bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		fmt.Println("Executing records delete operation")
		resps, err := adm.DeleteRecords(ctx, offsets)
		if err != nil {
			return err
		}
		fmt.Println("Records delete operation completed:")
		failed := 0
		for _, r := range resps.Sorted() {
			if r.Err != nil {
				failed++
				fmt.Printf("partition: %s-%d\terror: %v\n", r.Topic, r.Partition, r.Err)
				continue
			}
			fmt.Printf("partition: %s-%d\tlow_watermark: %d\n", r.Topic, r.Partition, r.LowWatermark)
		}
		if failed > 0 {
			return &kafkaError{msg: fmt.Sprintf("%d partitions failed", failed)}
		}
		return nil
	})
}

func readOffsetFile(path string) (kadm.Offsets, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxOffsetFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxOffsetFile {
		return nil, fmt.Errorf("%s is over %d bytes", path, maxOffsetFile)
	}
	var doc struct {
		Partitions []struct {
			Topic     string `json:"topic"`
			Partition *int32 `json:"partition"`
			Offset    *int64 `json:"offset"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Partitions) == 0 {
		return nil, fmt.Errorf("%s names no partition", path)
	}
	offsets := kadm.Offsets{}
	for _, p := range doc.Partitions {
		if p.Topic == "" || p.Partition == nil || *p.Partition < 0 || p.Offset == nil || *p.Offset < -1 {
			return nil, fmt.Errorf("%s: each partition needs a topic, a partition >= 0 and an offset >= -1", path)
		}
		if _, dup := offsets.Lookup(p.Topic, *p.Partition); dup {
			return nil, fmt.Errorf("Offset json file contains duplicate topic partitions: %s-%d", p.Topic, *p.Partition)
		}
		offsets.AddOffset(p.Topic, *p.Partition, *p.Offset, -1)
	}
	return offsets, nil
}

// kafkaLogDirs is kafka-log-dirs.sh --describe: each broker's log
// directories and the partitions in them, as Kafka's JSON.
func kafkaLogDirs(args []string) error {
	t := newKafkaTool("kafka-log-dirs.sh", "This tool helps to query log directory usage on the specified brokers.", "command-config", false)
	var describe bool
	var brokerList, topicList string
	t.flag(&describe, "describe", "Describe the specified log directories on the specified brokers.")
	t.str(&brokerList, "broker-list", "String: Broker list", "The list of brokers to be queried in the form \"0,1,2\". All brokers in the cluster will be queried if no broker list is specified")
	t.str(&topicList, "topic-list", "String: Topic list", "The list of topics to be queried in the form \"topic1,topic2,topic3\". All topics will be queried if no topic list is specified")
	if err := t.parse(args); err != nil {
		return err
	}
	if !describe {
		return t.usage("Missing required argument \"[describe]\"")
	}
	var brokers []int32
	if brokerList != "" {
		for _, s := range strings.Split(brokerList, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
			if err != nil {
				return t.usage("--broker-list %q: %q is not a broker id", brokerList, s)
			}
			brokers = append(brokers, int32(id))
		}
	}
	bootstrap, err := t.connect()
	if err != nil {
		return err
	}
	return withAdmin(bootstrap, func(ctx context.Context, adm *kadm.Client) error {
		return describeLogDirs(ctx, adm, brokers, topicList)
	})
}

func describeLogDirs(ctx context.Context, adm *kadm.Client, brokers []int32, topicList string) error {
	fmt.Println("Querying brokers for log directories information")
	set := kadm.TopicsSet{}
	if topicList != "" {
		topics := strings.Split(topicList, ",")
		md, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			return err
		}
		for _, d := range md {
			for p := range d.Partitions {
				set.Add(d.Topic, p)
			}
		}
	}
	if len(brokers) == 0 {
		md, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return err
		}
		for _, b := range md.Brokers {
			brokers = append(brokers, b.NodeID)
		}
	}
	sort.Slice(brokers, func(i, j int) bool { return brokers[i] < brokers[j] })
	type partitionJSON struct {
		Partition string `json:"partition"`
		Size      int64  `json:"size"`
		OffsetLag int64  `json:"offsetLag"`
		IsFuture  bool   `json:"isFuture"`
	}
	type dirJSON struct {
		LogDir     string          `json:"logDir"`
		Error      *string         `json:"error"`
		Partitions []partitionJSON `json:"partitions"`
	}
	type brokerJSON struct {
		Broker  int32     `json:"broker"`
		LogDirs []dirJSON `json:"logDirs"`
	}
	out := struct {
		Version int          `json:"version"`
		Brokers []brokerJSON `json:"brokers"`
	}{Version: 1, Brokers: []brokerJSON{}}
	for _, id := range brokers {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, id, set)
		if err != nil {
			return fmt.Errorf("broker %d: %w", id, err)
		}
		b := brokerJSON{Broker: id, LogDirs: []dirJSON{}}
		for _, d := range dirs.Sorted() {
			dj := dirJSON{LogDir: d.Dir, Partitions: []partitionJSON{}}
			if d.Err != nil {
				msg := d.Err.Error()
				dj.Error = &msg
			}
			for _, p := range d.Topics.Sorted() {
				dj.Partitions = append(dj.Partitions, partitionJSON{Partition: fmt.Sprintf("%s-%d", p.Topic, p.Partition), Size: p.Size, OffsetLag: p.OffsetLag, IsFuture: p.IsFuture})
			}
			b.LogDirs = append(b.LogDirs, dj)
		}
		out.Brokers = append(out.Brokers, b)
	}
	fmt.Printf("Received log directory information from brokers %s\n", joinIDs(brokers))
	data, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Println(string(data))
	return nil
}
