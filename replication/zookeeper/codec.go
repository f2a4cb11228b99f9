package zookeeper

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The znodes' JSON, byte for byte as Kafka 2.8 (Scala 2.13, Jackson)
// writes it: Kafka builds each document from a Scala map, so its key
// order is that map's iteration order — insertion order for immutable
// maps of up to four entries, hash-bucket order for mutable HashMaps
// (scalaHashOrder reproduces it). Decoders accept any order and the
// older versions Kafka still reads.

// maxZnodeBytes bounds what a decoder accepts: ZooKeeper's own limit
// (jute.maxbuffer) is 1 MiB.
const maxZnodeBytes = 1 << 20

// UUID is Kafka's Uuid: 16 bytes, shown as unpadded base64url (22 chars),
// used for the cluster id and topic ids.
type UUID [16]byte

// NewUUID draws a random (version 4) UUID from r, skipping the values
// Kafka reserves (zero, the metadata topic's 1) and those whose text
// starts with '-' (a command-line flag lookalike), as Uuid.randomUuid does.
func NewUUID(r io.Reader) (UUID, error) {
	for {
		var u UUID
		if _, err := io.ReadFull(r, u[:]); err != nil {
			return UUID{}, fmt.Errorf("zookeeper: random uuid: %w", err)
		}
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		if !strings.HasPrefix(u.String(), "-") {
			return u, nil
		}
	}
}

func (u UUID) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// IsZero reports whether u is the zero UUID (no id).
func (u UUID) IsZero() bool { return u == UUID{} }

// ParseUUID parses the 22-character base64url form.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 22 {
		return u, fmt.Errorf("%w: uuid %q is not 22 characters", ErrCorrupt, truncate(s))
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("%w: uuid %q: not base64url", ErrCorrupt, s)
	}
	copy(u[:], b)
	return u, nil
}

// jsonWriter builds one JSON document with keys in a chosen order.
type jsonWriter struct {
	buf   bytes.Buffer
	comma []bool // per open object/array: an element was written
}

func (w *jsonWriter) sep() {
	if n := len(w.comma); n > 0 {
		if w.comma[n-1] {
			w.buf.WriteByte(',')
		}
		w.comma[n-1] = true
	}
}

func (w *jsonWriter) open(c byte)  { w.buf.WriteByte(c); w.comma = append(w.comma, false) }
func (w *jsonWriter) close(c byte) { w.buf.WriteByte(c); w.comma = w.comma[:len(w.comma)-1] }

func (w *jsonWriter) str(s string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // Jackson writes <, > and & as they are
	enc.Encode(s)
	w.buf.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

func (w *jsonWriter) field(k string, value func()) {
	w.sep()
	w.str(k)
	w.buf.WriteByte(':')
	value()
}
func (w *jsonWriter) intField(k string, v int64) {
	w.field(k, func() { w.buf.WriteString(strconv.FormatInt(v, 10)) })
}
func (w *jsonWriter) strField(k, v string) { w.field(k, func() { w.str(v) }) }

func (w *jsonWriter) ints(vs []int32) {
	w.open('[')
	for _, v := range vs {
		w.sep()
		w.buf.WriteString(strconv.FormatInt(int64(v), 10))
	}
	w.close(']')
}

// intListMap writes {"0":[1,2],…} with its keys in the order of a Scala
// mutable.HashMap built empty, as Kafka's partition maps are.
func (w *jsonWriter) intListMap(m map[int32][]int32) {
	keys := make([]string, 0, len(m))
	for p := range m {
		keys = append(keys, strconv.FormatInt(int64(p), 10))
	}
	w.open('{')
	for _, k := range scalaHashOrder(keys, 0) {
		p, _ := strconv.ParseInt(k, 10, 32)
		w.field(k, func() { w.ints(m[int32(p)]) })
	}
	w.close('}')
}

func (w *jsonWriter) bytes() []byte { return slices.Clone(w.buf.Bytes()) }

// scalaHashOrder is the iteration order of a Scala 2.13 mutable.HashMap
// holding keys: buckets by the spread Java hash, each bucket sorted by
// signed hash. builtWith is how many entries it was created with
// (mutable.Map(k -> v, …) sizes its table for them; 0 for an empty map).
func scalaHashOrder(keys []string, builtWith int) []string {
	size := 16
	if builtWith > 0 {
		size = scalaTableSizeFor(int(float64(builtWith+1) / 0.75))
	}
	for n := 0; n < len(keys); n++ { // put0 grows before the insert that reaches the threshold
		if n+1 >= int(float64(size)*0.75) {
			size *= 2
		}
	}
	hash := func(k string) int32 { h := javaStringHash(k); return h ^ int32(uint32(h)>>16) }
	out := slices.Clone(keys)
	sort.SliceStable(out, func(i, j int) bool {
		hi, hj := hash(out[i]), hash(out[j])
		bi, bj := hi&int32(size-1), hj&int32(size-1)
		if bi != bj {
			return bi < bj
		}
		return hi < hj
	})
	return out
}

func scalaTableSizeFor(capacity int) int {
	n := 1
	for n*2 <= max(capacity-1, 4) { // Integer.highestOneBit
		n *= 2
	}
	return min(n*2, 1<<30)
}

func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 { // UTF-16 surrogate pair
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3ff))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// decodeJSON unmarshals untrusted znode bytes into v, bounded in size.
func decodeJSON(what string, data []byte, v any) error {
	if len(data) == 0 {
		return fmt.Errorf("%w: %s is empty", ErrCorrupt, what)
	}
	if len(data) > maxZnodeBytes {
		return fmt.Errorf("%w: %s is %d bytes (limit %d)", ErrCorrupt, what, len(data), maxZnodeBytes)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, what, err)
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// ---- /cluster/id: {"version":"1","id":"…"}

func encodeClusterID(id string) []byte {
	var w jsonWriter
	w.open('{')
	w.strField("version", "1")
	w.strField("id", id)
	w.close('}')
	return w.bytes()
}

func decodeClusterID(data []byte) (string, error) {
	var v struct {
		ID *string `json:"id"`
	}
	if err := decodeJSON("/cluster/id", data, &v); err != nil {
		return "", err
	}
	if v.ID == nil || *v.ID == "" {
		return "", fmt.Errorf("%w: /cluster/id has no id", ErrCorrupt)
	}
	return *v.ID, nil
}

// ---- /controller: {"version":1,"brokerid":N,"timestamp":"ms"}

func encodeController(brokerID int32, timestampMs int64) []byte {
	var w jsonWriter
	w.open('{')
	w.intField("version", 1)
	w.intField("brokerid", int64(brokerID))
	w.strField("timestamp", strconv.FormatInt(timestampMs, 10))
	w.close('}')
	return w.bytes()
}

func decodeController(data []byte) (int32, error) {
	var v struct {
		BrokerID *int32 `json:"brokerid"`
	}
	if err := decodeJSON("/controller", data, &v); err != nil {
		return 0, err
	}
	if v.BrokerID == nil || *v.BrokerID < 0 {
		return 0, fmt.Errorf("%w: /controller has no valid brokerid", ErrCorrupt)
	}
	return *v.BrokerID, nil
}

// ---- /controller_epoch: the epoch as decimal text

func encodeControllerEpoch(epoch int32) []byte { return []byte(strconv.FormatInt(int64(epoch), 10)) }

func decodeControllerEpoch(data []byte) (int32, error) {
	e, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 32)
	if err != nil || e < 0 {
		return 0, fmt.Errorf("%w: /controller_epoch %q is not an epoch", ErrCorrupt, truncate(string(data)))
	}
	return int32(e), nil
}

// ---- /config/topics/<t>: {"version":1,"config":{…}}

// encodeConfig writes the config keys sorted (Kafka's order is that of a
// java.util.Properties, which depends on the JVM's insertion history).
func encodeConfig(cfg map[string]string) []byte {
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var w jsonWriter
	w.open('{')
	w.intField("version", 1)
	w.field("config", func() {
		w.open('{')
		for _, k := range keys {
			w.strField(k, cfg[k])
		}
		w.close('}')
	})
	w.close('}')
	return w.bytes()
}

func decodeConfig(what string, data []byte) (map[string]string, error) {
	if len(data) == 0 { // Kafka reads a null znode as no overrides
		return map[string]string{}, nil
	}
	var v struct {
		Config map[string]string `json:"config"`
	}
	if err := decodeJSON(what, data, &v); err != nil {
		return nil, err
	}
	if v.Config == nil {
		v.Config = map[string]string{}
	}
	return v.Config, nil
}

// ---- /config/changes/config_change_<seq>: {"version":2,"entity_path":"topics/<t>"}

func encodeConfigChange(entityPath string) []byte {
	var w jsonWriter
	w.open('{')
	w.intField("version", 2)
	w.strField("entity_path", entityPath)
	w.close('}')
	return w.bytes()
}

// ---- /brokers/ids/<id>, version 5

// Endpoint is one listener a broker advertises.
type Endpoint struct {
	Listener         string // listener name, e.g. PLAINTEXT or INTERNAL
	Host             string
	Port             int
	SecurityProtocol string // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
}

// ConnectionString is Kafka's "LISTENER://host:port".
func (e Endpoint) ConnectionString() string {
	if e.Host == "" {
		return e.Listener + "://:" + strconv.Itoa(e.Port)
	}
	return e.Listener + "://" + net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
}

// BrokerInfo is a broker's registration.
type BrokerInfo struct {
	ID        int32
	Endpoints []Endpoint
	Rack      string // "" for none
	JMXPort   int    // -1 for none
	// Timestamp is the registration time in Unix milliseconds, set by
	// the caller (this package reads no clock).
	Timestamp int64
	// Version is the JSON version read back (Register writes 5).
	Version int
	// HTTP is ferry's HTTP gateway of the broker ("host:port"; "" for
	// none), written as ferry_http_endpoint after Kafka's keys (Kafka's
	// readers ignore keys they do not know), so a node can hand a request
	// to the broker that serves it.
	HTTP string
	// Features are the broker's supported feature ranges (KIP-584), as
	// Kafka writes them: {"transaction.version":{"min_version":0,"max_version":2}}.
	// A broker that lists no range for a feature supports only level 0.
	Features map[string]FeatureRange
}

// FeatureRange is the levels of a feature a broker supports.
type FeatureRange struct {
	Min int16 `json:"min_version"`
	Max int16 `json:"max_version"`
}

// plaintext is the top-level host/port Kafka keeps for old clients: the
// first PLAINTEXT endpoint, else none (null, -1).
func (b BrokerInfo) plaintext() (host *string, port int) {
	for _, e := range b.Endpoints {
		if e.SecurityProtocol == "PLAINTEXT" {
			h := e.Host
			return &h, e.Port
		}
	}
	return nil, -1
}

// brokerKeysOrder is the order of a 6-entry mutable.Map grown to 8 or 9
// keys (with or without rack), see scalaHashOrder.
func brokerKeysOrder(withRack bool) []string {
	keys := []string{"version", "host", "port", "endpoints", "jmx_port", "timestamp"}
	if withRack {
		keys = append(keys, "rack")
	}
	keys = append(keys, "listener_security_protocol_map", "features")
	return scalaHashOrder(keys, 6)
}

func encodeBroker(b BrokerInfo) []byte {
	host, port := b.plaintext()
	var w jsonWriter
	w.open('{')
	for _, k := range brokerKeysOrder(b.Rack != "") {
		switch k {
		case "version":
			w.intField(k, 5)
		case "host":
			w.field(k, func() {
				if host == nil {
					w.buf.WriteString("null")
				} else {
					w.str(*host)
				}
			})
		case "port":
			w.intField(k, int64(port))
		case "endpoints":
			w.field(k, func() {
				w.open('[')
				for _, e := range b.Endpoints {
					w.sep()
					w.str(e.ConnectionString())
				}
				w.close(']')
			})
		case "jmx_port":
			w.intField(k, int64(b.JMXPort))
		case "timestamp":
			w.strField(k, strconv.FormatInt(b.Timestamp, 10))
		case "rack":
			w.strField(k, b.Rack)
		case "listener_security_protocol_map":
			w.field(k, func() { w.securityProtocolMap(b.Endpoints) })
		case "features":
			w.field(k, func() { w.featureRanges(b.Features) })
		}
	}
	if b.HTTP != "" {
		w.strField("ferry_http_endpoint", b.HTTP)
	}
	w.close('}')
	return w.bytes()
}

func (w *jsonWriter) featureRanges(fs map[string]FeatureRange) {
	names := make([]string, 0, len(fs))
	for n := range fs {
		names = append(names, n)
	}
	sort.Strings(names)
	w.open('{')
	for _, n := range names {
		w.field(n, func() {
			w.open('{')
			w.intField("min_version", int64(fs[n].Min))
			w.intField("max_version", int64(fs[n].Max))
			w.close('}')
		})
	}
	w.close('}')
}

// securityProtocolMap is a Scala immutable Map, in insertion order for
// the usual one to four listeners.
func (w *jsonWriter) securityProtocolMap(eps []Endpoint) {
	w.open('{')
	seen := map[string]bool{}
	for _, e := range eps {
		if !seen[e.Listener] {
			seen[e.Listener] = true
			w.strField(e.Listener, e.SecurityProtocol)
		}
	}
	w.close('}')
}

type brokerJSON struct {
	Version     *int                    `json:"version"`
	Host        *string                 `json:"host"`
	Port        *int                    `json:"port"`
	JMXPort     *int                    `json:"jmx_port"`
	Timestamp   string                  `json:"timestamp"`
	Endpoints   []string                `json:"endpoints"`
	Rack        *string                 `json:"rack"`
	ProtocolMap map[string]string       `json:"listener_security_protocol_map"`
	HTTP        string                  `json:"ferry_http_endpoint"`
	Features    map[string]FeatureRange `json:"features"`
}

func decodeBroker(id int32, data []byte) (BrokerInfo, error) {
	what := fmt.Sprintf("/brokers/ids/%d", id)
	var v brokerJSON
	if err := decodeJSON(what, data, &v); err != nil {
		return BrokerInfo{}, err
	}
	if v.Version == nil || *v.Version < 1 {
		return BrokerInfo{}, fmt.Errorf("%w: %s: no supported version", ErrCorrupt, what)
	}
	b := BrokerInfo{ID: id, Version: *v.Version, JMXPort: -1}
	if v.JMXPort != nil {
		b.JMXPort = *v.JMXPort
	}
	if v.Rack != nil {
		b.Rack = *v.Rack
	}
	if v.Timestamp != "" {
		ts, err := strconv.ParseInt(v.Timestamp, 10, 64)
		if err != nil {
			return BrokerInfo{}, fmt.Errorf("%w: %s: timestamp %q", ErrCorrupt, what, truncate(v.Timestamp))
		}
		b.Timestamp = ts
	}
	eps, err := v.endpoints(what)
	if err != nil {
		return BrokerInfo{}, err
	}
	b.Endpoints = eps
	if v.HTTP != "" {
		if _, _, err := net.SplitHostPort(v.HTTP); err != nil {
			return BrokerInfo{}, fmt.Errorf("%w: %s: ferry_http_endpoint %q", ErrCorrupt, what, truncate(v.HTTP))
		}
		b.HTTP = v.HTTP
	}
	for name, r := range v.Features {
		if name == "" || r.Min < 0 || r.Max < r.Min {
			return BrokerInfo{}, fmt.Errorf("%w: %s: feature %q range %d-%d", ErrCorrupt, what, truncate(name), r.Min, r.Max)
		}
	}
	if len(v.Features) > 0 {
		b.Features = v.Features
	}
	return b, nil
}

func (v brokerJSON) endpoints(what string) ([]Endpoint, error) {
	if *v.Version == 1 { // host and port only, PLAINTEXT
		if v.Host == nil || v.Port == nil {
			return nil, fmt.Errorf("%w: %s: version 1 without host and port", ErrCorrupt, what)
		}
		return []Endpoint{{Listener: "PLAINTEXT", Host: *v.Host, Port: *v.Port, SecurityProtocol: "PLAINTEXT"}}, nil
	}
	eps := make([]Endpoint, 0, len(v.Endpoints))
	for _, s := range v.Endpoints {
		e, err := parseEndpoint(s, v.ProtocolMap)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, what, err)
		}
		eps = append(eps, e)
	}
	return eps, nil
}

// parseEndpoint reads "LISTENER://host:port" (host may be empty or a
// bracketed IPv6 address); without a protocol map the listener name is
// the security protocol, as in Kafka before listener names.
func parseEndpoint(s string, protocols map[string]string) (Endpoint, error) {
	name, hostport, ok := strings.Cut(s, "://")
	if !ok || name == "" {
		return Endpoint{}, fmt.Errorf("endpoint %q is not LISTENER://host:port", truncate(s))
	}
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		return Endpoint{}, fmt.Errorf("endpoint %q: %v", truncate(s), err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > math.MaxUint16 {
		return Endpoint{}, fmt.Errorf("endpoint %q: bad port", truncate(s))
	}
	proto := name
	if protocols != nil {
		if proto = protocols[name]; proto == "" {
			return Endpoint{}, fmt.Errorf("endpoint %q: listener not in listener_security_protocol_map", truncate(s))
		}
	}
	return Endpoint{Listener: name, Host: host, Port: port, SecurityProtocol: proto}, nil
}

// ---- /brokers/topics/<t>, version 3 (Kafka 2.8, with topic_id)

// TopicAssignment is a topic's replica assignment and id.
type TopicAssignment struct {
	Name string
	ID   UUID // zero when the znode has no topic_id (written before 2.8)
	// Partitions maps each partition to its replicas, preferred leader
	// first.
	Partitions map[int32][]int32
	// Adding and Removing are the replicas an ongoing reassignment adds
	// and removes (KIP-455); empty outside one.
	Adding, Removing map[int32][]int32
}

func encodeTopic(t TopicAssignment) []byte {
	keys := []string{"version", "partitions", "adding_replicas", "removing_replicas"}
	if !t.ID.IsZero() {
		keys = append(keys, "topic_id")
	}
	var w jsonWriter
	w.open('{')
	for _, k := range scalaHashOrder(keys, 4) {
		switch k {
		case "version":
			w.intField(k, 3)
		case "partitions":
			w.field(k, func() { w.intListMap(t.Partitions) })
		case "adding_replicas":
			w.field(k, func() { w.intListMap(nonEmpty(t.Adding)) })
		case "removing_replicas":
			w.field(k, func() { w.intListMap(nonEmpty(t.Removing)) })
		case "topic_id":
			w.strField(k, t.ID.String())
		}
	}
	w.close('}')
	return w.bytes()
}

// nonEmpty drops partitions with no replicas, as Kafka writes only
// those with some.
func nonEmpty(m map[int32][]int32) map[int32][]int32 {
	out := make(map[int32][]int32, len(m))
	for p, r := range m {
		if len(r) > 0 {
			out[p] = r
		}
	}
	return out
}

type topicJSON struct {
	Version    int                `json:"version"`
	TopicID    *string            `json:"topic_id"`
	Partitions map[string][]int32 `json:"partitions"`
	Adding     map[string][]int32 `json:"adding_replicas"`
	Removing   map[string][]int32 `json:"removing_replicas"`
}

func decodeTopic(name string, data []byte) (TopicAssignment, error) {
	what := "/brokers/topics/" + name
	var v topicJSON
	if err := decodeJSON(what, data, &v); err != nil {
		return TopicAssignment{}, err
	}
	t := TopicAssignment{Name: name}
	var err error
	if v.TopicID != nil {
		if t.ID, err = ParseUUID(*v.TopicID); err != nil {
			return TopicAssignment{}, fmt.Errorf("%s: topic_id: %w", what, err)
		}
	}
	if t.Partitions, err = partitionMap(what, v.Partitions); err != nil {
		return TopicAssignment{}, err
	}
	if t.Adding, err = partitionMap(what, v.Adding); err != nil {
		return TopicAssignment{}, err
	}
	if t.Removing, err = partitionMap(what, v.Removing); err != nil {
		return TopicAssignment{}, err
	}
	return t, nil
}

func partitionMap(what string, in map[string][]int32) (map[int32][]int32, error) {
	out := make(map[int32][]int32, len(in))
	for k, replicas := range in {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("%w: %s: partition %q", ErrCorrupt, what, truncate(k))
		}
		if err := validReplicas(replicas); err != nil {
			return nil, fmt.Errorf("%w: %s: partition %d: %v", ErrCorrupt, what, p, err)
		}
		out[int32(p)] = replicas
	}
	return out, nil
}

func validReplicas(rs []int32) error {
	for i, r := range rs {
		if r < 0 {
			return fmt.Errorf("negative broker id %d", r)
		}
		if slices.Contains(rs[:i], r) {
			return fmt.Errorf("broker %d listed twice", r)
		}
	}
	return nil
}

// ---- /brokers/topics/<t>/partitions/<p>/state

// PartitionState is a partition's leader and ISR as the controller (or
// the leader, for ISR changes) last wrote them.
type PartitionState struct {
	Leader          int32 // -1 for none
	LeaderEpoch     int32
	ISR             []int32
	ControllerEpoch int32 // of the controller that chose this leader
	// Version is the znode's version: read from ZooKeeper, and expected
	// by conditional updates.
	Version int32
}

// encodeState follows the order Kafka's five-entry immutable HashMap
// iterates in.
func encodeState(s PartitionState) []byte {
	var w jsonWriter
	w.open('{')
	w.intField("controller_epoch", int64(s.ControllerEpoch))
	w.intField("leader", int64(s.Leader))
	w.intField("version", 1)
	w.intField("leader_epoch", int64(s.LeaderEpoch))
	w.field("isr", func() { w.ints(s.ISR) })
	w.close('}')
	return w.bytes()
}

func decodeState(what string, data []byte, version int32) (PartitionState, error) {
	var v struct {
		Leader          *int32  `json:"leader"`
		LeaderEpoch     *int32  `json:"leader_epoch"`
		ISR             []int32 `json:"isr"`
		ControllerEpoch *int32  `json:"controller_epoch"`
	}
	if err := decodeJSON(what, data, &v); err != nil {
		return PartitionState{}, err
	}
	if v.Leader == nil || v.LeaderEpoch == nil || v.ControllerEpoch == nil || v.ISR == nil {
		return PartitionState{}, fmt.Errorf("%w: %s: needs leader, leader_epoch, isr and controller_epoch", ErrCorrupt, what)
	}
	if *v.Leader < -1 || *v.LeaderEpoch < 0 || *v.ControllerEpoch < 0 {
		return PartitionState{}, fmt.Errorf("%w: %s: negative leader, leader_epoch or controller_epoch", ErrCorrupt, what)
	}
	if err := validReplicas(v.ISR); err != nil {
		return PartitionState{}, fmt.Errorf("%w: %s: isr: %v", ErrCorrupt, what, err)
	}
	return PartitionState{Leader: *v.Leader, LeaderEpoch: *v.LeaderEpoch, ISR: v.ISR,
		ControllerEpoch: *v.ControllerEpoch, Version: version}, nil
}

// ---- partition lists: /isr_change_notification/isr_change_<seq> and
// /admin/reassign_partitions

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func encodePartitionList(parts []TopicPartition) []byte {
	var w jsonWriter
	w.open('{')
	w.intField("version", 1)
	w.field("partitions", func() {
		w.open('[')
		for _, tp := range parts {
			w.sep()
			w.open('{')
			w.strField("topic", tp.Topic)
			w.intField("partition", int64(tp.Partition))
			w.close('}')
		}
		w.close(']')
	})
	w.close('}')
	return w.bytes()
}

type partitionEntryJSON struct {
	Topic     *string `json:"topic"`
	Partition *int32  `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

func decodePartitionEntries(what string, data []byte) ([]partitionEntryJSON, error) {
	var v struct {
		Partitions []partitionEntryJSON `json:"partitions"`
	}
	if err := decodeJSON(what, data, &v); err != nil {
		return nil, err
	}
	for _, e := range v.Partitions {
		if e.Topic == nil || e.Partition == nil || *e.Topic == "" || *e.Partition < 0 {
			return nil, fmt.Errorf("%w: %s: an entry lacks a topic or a valid partition", ErrCorrupt, what)
		}
	}
	return v.Partitions, nil
}

func decodePartitionList(what string, data []byte) ([]TopicPartition, error) {
	entries, err := decodePartitionEntries(what, data)
	if err != nil {
		return nil, err
	}
	out := make([]TopicPartition, len(entries))
	for i, e := range entries {
		out[i] = TopicPartition{Topic: *e.Topic, Partition: *e.Partition}
	}
	return out, nil
}

// Reassignment is one partition's target replicas in
// /admin/reassign_partitions.
type Reassignment struct {
	TopicPartition
	Replicas []int32
}

func encodeReassignments(rs []Reassignment) []byte {
	var w jsonWriter
	w.open('{')
	w.intField("version", 1)
	w.field("partitions", func() {
		w.open('[')
		for _, r := range rs {
			w.sep()
			w.open('{')
			w.strField("topic", r.Topic)
			w.intField("partition", int64(r.Partition))
			w.field("replicas", func() { w.ints(r.Replicas) })
			w.close('}')
		}
		w.close(']')
	})
	w.close('}')
	return w.bytes()
}

func decodeReassignments(data []byte) ([]Reassignment, error) {
	const what = "/admin/reassign_partitions"
	entries, err := decodePartitionEntries(what, data)
	if err != nil {
		return nil, err
	}
	out := make([]Reassignment, len(entries))
	for i, e := range entries {
		if err := validReplicas(e.Replicas); err != nil {
			return nil, fmt.Errorf("%w: %s: %s-%d: %v", ErrCorrupt, what, *e.Topic, *e.Partition, err)
		}
		out[i] = Reassignment{TopicPartition{*e.Topic, *e.Partition}, e.Replicas}
	}
	return out, nil
}
