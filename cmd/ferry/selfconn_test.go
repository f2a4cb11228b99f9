package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
)

// The controller's dial reaches this node's own addresses in process and
// the others through the network dial; the in-process dial before the
// Kafka server exists is a dial error (franz-go retries or moves on).
func TestOwnAddressesAreDialledInProcess(t *testing.T) {
	var got []string
	dialer := func(tag string) func(context.Context, string, string) (net.Conn, error) {
		return func(_ context.Context, _, addr string) (net.Conn, error) {
			got = append(got, tag+" "+addr)
			return nil, errors.New("recorded")
		}
	}
	d := ownOr([]string{"127.0.0.1:9092", "node1:9092"}, dialer("self"), dialer("net"))
	for _, addr := range []string{"127.0.0.1:9092", "node2:9092", "node1:9092"} {
		d(context.Background(), "tcp", addr)
	}
	if want := "[self 127.0.0.1:9092 net node2:9092 self node1:9092]"; fmt.Sprint(got) != want {
		t.Fatalf("dials %v, want %s", got, want)
	}

	var k inProcessKafka
	_, err := k.pipe(context.Background(), "tcp", "127.0.0.1:9092")
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "dial" || !errors.Is(err, errKafkaNotServing) {
		t.Fatalf("in-process dial before the server exists: %v", err)
	}
}
