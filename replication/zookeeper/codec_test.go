package zookeeper

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// Samples in the exact shape Kafka 2.8 writes, derived from ZkData.scala
// (the key orders are those of the Scala maps it builds).
const (
	kafkaBroker       = `{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,"host":"localhost","version":5,"timestamp":"1625336133848"}`
	kafkaBrokerRack   = `{"features":{},"listener_security_protocol_map":{"INTERNAL":"PLAINTEXT","EXTERNAL":"SSL"},"endpoints":["INTERNAL://10.0.0.1:9092","EXTERNAL://b1.example.com:9093"],"rack":"r1","jmx_port":-1,"port":9092,"host":"10.0.0.1","version":5,"timestamp":"1625336133848"}`
	kafkaBrokerNoText = `{"features":{},"listener_security_protocol_map":{"SSL":"SSL"},"endpoints":["SSL://[::1]:9093"],"jmx_port":-1,"port":-1,"host":null,"version":5,"timestamp":"7"}`
	kafkaTopic        = `{"partitions":{"0":[1,2,3],"1":[2,3,1],"2":[3,1,2]},"topic_id":"AAECAwQFRgeICQoLDA0ODw","adding_replicas":{},"removing_replicas":{},"version":3}`
	kafkaState        = `{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]}`
	kafkaController   = `{"version":1,"brokerid":1,"timestamp":"1625336134171"}`
	kafkaClusterID    = `{"version":"1","id":"AAECAwQFRgeICQoLDA0ODw"}`
	kafkaConfig       = `{"version":1,"config":{"cleanup.policy":"compact","retention.ms":"1000"}}`
	kafkaISRChange    = `{"version":1,"partitions":[{"topic":"orders","partition":0},{"topic":"orders","partition":2}]}`
	kafkaReassign     = `{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1,2]}]}`
)

var sampleUUID = UUID{0, 1, 2, 3, 4, 5, 0x46, 7, 0x88, 9, 10, 11, 12, 13, 14, 15}

func sameJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if !bytes.Equal(got, []byte(want)) {
		t.Errorf("%s:\n got %s\nwant %s", what, got, want)
	}
}

func TestBrokerJSONIsKafkas(t *testing.T) {
	b := BrokerInfo{ID: 1, JMXPort: -1, Timestamp: 1625336133848,
		Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "localhost", Port: 9092, SecurityProtocol: "PLAINTEXT"}}}
	sameJSON(t, "broker", encodeBroker(b), kafkaBroker)
	b2 := BrokerInfo{ID: 2, JMXPort: -1, Timestamp: 1625336133848, Rack: "r1", Endpoints: []Endpoint{
		{Listener: "INTERNAL", Host: "10.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"},
		{Listener: "EXTERNAL", Host: "b1.example.com", Port: 9093, SecurityProtocol: "SSL"}}}
	sameJSON(t, "broker with rack", encodeBroker(b2), kafkaBrokerRack)
	b3 := BrokerInfo{ID: 3, JMXPort: -1, Timestamp: 7, Endpoints: []Endpoint{{Listener: "SSL", Host: "::1", Port: 9093, SecurityProtocol: "SSL"}}}
	sameJSON(t, "broker without plaintext", encodeBroker(b3), kafkaBrokerNoText)

	for _, tc := range []struct {
		in   string
		want BrokerInfo
	}{{kafkaBroker, b}, {kafkaBrokerRack, b2}, {kafkaBrokerNoText, b3}} {
		got, err := decodeBroker(tc.want.ID, []byte(tc.in))
		tc.want.Version = 5
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("decode %s:\n got %+v %v\nwant %+v", tc.in, got, err, tc.want)
		}
	}
}

// ferry's HTTP endpoint rides after Kafka's keys and reads back; a
// malformed one is refused.
func TestBrokerHTTPEndpoint(t *testing.T) {
	b := BrokerInfo{ID: 1, JMXPort: -1, Timestamp: 1625336133848, HTTP: "10.0.0.1:8081",
		Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "localhost", Port: 9092, SecurityProtocol: "PLAINTEXT"}}}
	data := encodeBroker(b)
	if want := strings.TrimSuffix(kafkaBroker, "}") + `,"ferry_http_endpoint":"10.0.0.1:8081"}`; string(data) != want {
		t.Fatalf("got %s\nwant %s", data, want)
	}
	got, err := decodeBroker(1, data)
	b.Version = 5
	if err != nil || !reflect.DeepEqual(got, b) {
		t.Fatalf("decode: %+v %v", got, err)
	}
	bad := strings.Replace(string(data), "10.0.0.1:8081", "no port", 1)
	if _, err := decodeBroker(1, []byte(bad)); err == nil {
		t.Fatal("a ferry_http_endpoint without a port was accepted")
	}
}

func TestOlderBrokerVersionsDecode(t *testing.T) {
	v1 := `{"version":1,"host":"h","port":9092,"jmx_port":9999,"timestamp":"1"}`
	b, err := decodeBroker(0, []byte(v1))
	if err != nil || len(b.Endpoints) != 1 || b.Endpoints[0].ConnectionString() != "PLAINTEXT://h:9092" || b.JMXPort != 9999 {
		t.Fatalf("v1: %+v %v", b, err)
	}
	v2 := `{"version":2,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1","endpoints":["PLAINTEXT://h:9092","SSL://h:9093"]}`
	b, err = decodeBroker(0, []byte(v2))
	if err != nil || len(b.Endpoints) != 2 || b.Endpoints[1].SecurityProtocol != "SSL" {
		t.Fatalf("v2: %+v %v", b, err)
	}
}

func TestTopicJSONIsKafkas(t *testing.T) {
	ta := TopicAssignment{Name: "orders", ID: sampleUUID, Partitions: map[int32][]int32{0: {1, 2, 3}, 1: {2, 3, 1}, 2: {3, 1, 2}}}
	sameJSON(t, "topic", encodeTopic(ta), kafkaTopic)
	got, err := decodeTopic("orders", []byte(kafkaTopic))
	ta.Adding, ta.Removing = map[int32][]int32{}, map[int32][]int32{}
	if err != nil || !reflect.DeepEqual(got, ta) {
		t.Fatalf("decode: %+v %v", got, err)
	}
	// Kafka 2.7's version 2, without topic_id, still reads.
	old, err := decodeTopic("orders", []byte(`{"version":2,"partitions":{"0":[1]},"adding_replicas":{},"removing_replicas":{}}`))
	if err != nil || !old.ID.IsZero() || len(old.Partitions[0]) != 1 {
		t.Fatalf("v2: %+v %v", old, err)
	}
}

// TestPartitionKeyOrderFollowsScalaHashMap: past 11 partitions Kafka's
// map grows to 32 buckets and "11".."19" come before "0".
func TestPartitionKeyOrderFollowsScalaHashMap(t *testing.T) {
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	got := scalaHashOrder(keys, 0)
	want := []string{"11", "12", "13", "14", "15", "16", "17", "18", "19", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
	if got := scalaHashOrder(keys[:11], 0); !reflect.DeepEqual(got, keys[:11]) {
		t.Fatalf("11 keys: %v", got)
	}
}

func TestSmallZnodesAreKafkas(t *testing.T) {
	st := PartitionState{Leader: 1, LeaderEpoch: 0, ISR: []int32{1, 2, 3}, ControllerEpoch: 1}
	sameJSON(t, "state", encodeState(st), kafkaState)
	got, err := decodeState("s", []byte(kafkaState), 4)
	st.Version = 4
	if err != nil || !reflect.DeepEqual(got, st) {
		t.Fatalf("state: %+v %v", got, err)
	}
	sameJSON(t, "controller", encodeController(1, 1625336134171), kafkaController)
	if id, err := decodeController([]byte(kafkaController)); err != nil || id != 1 {
		t.Fatalf("controller: %d %v", id, err)
	}
	sameJSON(t, "cluster id", encodeClusterID(sampleUUID.String()), kafkaClusterID)
	if id, err := decodeClusterID([]byte(kafkaClusterID)); err != nil || id != sampleUUID.String() {
		t.Fatalf("cluster id: %s %v", id, err)
	}
	sameJSON(t, "config", encodeConfig(map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}), kafkaConfig)
	parts := []TopicPartition{{"orders", 0}, {"orders", 2}}
	sameJSON(t, "isr change", encodePartitionList(parts), kafkaISRChange)
	if got, err := decodePartitionList("x", []byte(kafkaISRChange)); err != nil || !reflect.DeepEqual(got, parts) {
		t.Fatalf("isr change: %v %v", got, err)
	}
	rs := []Reassignment{{TopicPartition{"orders", 0}, []int32{1, 2}}}
	sameJSON(t, "reassign", encodeReassignments(rs), kafkaReassign)
	if got, err := decodeReassignments([]byte(kafkaReassign)); err != nil || !reflect.DeepEqual(got, rs) {
		t.Fatalf("reassign: %v %v", got, err)
	}
	if string(encodeControllerEpoch(7)) != "7" {
		t.Fatal("controller epoch")
	}
}

func TestUUIDText(t *testing.T) {
	if s := sampleUUID.String(); len(s) != 22 {
		t.Fatalf("%q", s)
	}
	u, err := ParseUUID(sampleUUID.String())
	if err != nil || u != sampleUUID {
		t.Fatal(u, err)
	}
	r := bytes.NewReader(bytes.Repeat([]byte{0xff}, 64))
	n, err := NewUUID(r)
	if err != nil || n[6]>>4 != 4 || n[8]>>6 != 2 || n.String()[0] == '-' {
		t.Fatalf("%v %v", n, err)
	}
}

func TestMalformedZnodesAreCorrupt(t *testing.T) {
	bad := map[string]func([]byte) error{
		"broker":     func(b []byte) error { _, err := decodeBroker(1, b); return err },
		"topic":      func(b []byte) error { _, err := decodeTopic("t", b); return err },
		"state":      func(b []byte) error { _, err := decodeState("s", b, 0); return err },
		"controller": func(b []byte) error { _, err := decodeController(b); return err },
		"epoch":      func(b []byte) error { _, err := decodeControllerEpoch(b); return err },
		"cluster":    func(b []byte) error { _, err := decodeClusterID(b); return err },
		"isr":        func(b []byte) error { _, err := decodePartitionList("i", b); return err },
		"reassign":   func(b []byte) error { _, err := decodeReassignments(b); return err },
	}
	inputs := []string{"", "{", "[]", `{"version":0}`, `{"partitions":{"x":[1]}}`, `{"partitions":{"0":[1,1]}}`,
		`{"leader":1,"leader_epoch":-1,"isr":[1],"controller_epoch":1}`, `{"brokerid":99999999999}`,
		`{"partitions":[{"topic":"t"}]}`, `{"version":5,"endpoints":["nohost"],"jmx_port":1}`, "-1", "x"}
	for name, decode := range bad {
		for _, in := range inputs {
			err := decode([]byte(in))
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s(%q): %v is not ErrCorrupt", name, in, err)
			}
		}
		if err := decode([]byte("")); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s(empty) = %v", name, err)
		}
	}
	if _, err := decodeTopic("t", bytes.Repeat([]byte(" "), maxZnodeBytes+1)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("oversized: %v", err)
	}
}

// FuzzDecoders: no input panics, and what decodes re-encodes to
// something that decodes the same.
func FuzzDecoders(f *testing.F) {
	for _, s := range []string{kafkaBroker, kafkaBrokerRack, kafkaTopic, kafkaState, kafkaController,
		kafkaClusterID, kafkaConfig, kafkaISRChange, kafkaReassign, kafkaFeatureV2, kafkaFeatureV1, kafkaBrokerTV, "1", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if b, err := decodeBroker(1, data); err == nil {
			if _, err := decodeBroker(1, encodeBroker(b)); err != nil && b.Version > 1 {
				t.Fatalf("broker re-decode: %v", err)
			}
		}
		if ta, err := decodeTopic("t", data); err == nil {
			again, err := decodeTopic("t", encodeTopic(ta))
			if err != nil || !reflect.DeepEqual(again.Partitions, ta.Partitions) {
				t.Fatalf("topic re-decode: %v", err)
			}
		}
		if st, err := decodeState("s", data, 1); err == nil {
			again, err := decodeState("s", encodeState(st), 1)
			if err != nil || !reflect.DeepEqual(again, st) {
				t.Fatalf("state re-decode: %v %+v %+v", err, again, st)
			}
		}
		if f, err := decodeFeatures(data, 1); err == nil {
			again, err := decodeFeatures(encodeFeatures(f.Levels), 1)
			if err != nil || !reflect.DeepEqual(again.Levels, f.Levels) {
				t.Fatalf("features re-decode: %v %+v %+v", err, again, f)
			}
		}
		decodeController(data)
		decodeControllerEpoch(data)
		decodeClusterID(data)
		decodeConfig("c", data)
		decodePartitionList("i", data)
		decodeReassignments(data)
	})
}
