package kcli

import (
	"strings"
	"testing"
)

// Reassignment files are checked before anything is sent: a clear error
// for each malformed shape, the valid one read as Kafka's tool writes it.
func TestParseReassignment(t *testing.T) {
	good := `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,4],"log_dirs":["any","any"]}]}`
	r, err := ParseReassignment(strings.NewReader(good))
	if err != nil || len(r.Partitions) != 1 || r.Partitions[0].Replicas[1] != 4 {
		t.Fatalf("good file: %+v %v", r, err)
	}
	if r.JSON() != good {
		t.Fatalf("written back as %s", r.JSON())
	}
	for name, bad := range map[string]string{
		"not json":      `{"version":1,`,
		"no partitions": `{"version":1,"partitions":[]}`,
		"no topic":      `{"partitions":[{"partition":0,"replicas":[1]}]}`,
		"negative":      `{"partitions":[{"topic":"t","partition":-1,"replicas":[1]}]}`,
		"twice":         `{"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}`,
		"no replicas":   `{"partitions":[{"topic":"t","partition":0,"replicas":[]}]}`,
		"repeated":      `{"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}`,
	} {
		if _, err := ParseReassignment(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: accepted %s", name, bad)
		}
	}
	if _, err := ParseTopicsToMove(strings.NewReader(`{"topics":[],"version":1}`)); err == nil {
		t.Error("a topics file naming no topic was accepted")
	}
	if topics, err := ParseTopicsToMove(strings.NewReader(`{"topics":[{"topic":"a"},{"topic":"b"}],"version":1}`)); err != nil || len(topics) != 2 {
		t.Errorf("topics file: %v %v", topics, err)
	}
}
