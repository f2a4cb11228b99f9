package kafka

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A franz-go client whose every connection is a net.Pipe served by
// ServeConn (as a ferry node's own clients reach their broker) produces
// and reads back without a socket; ServeConn refuses an unknown listener,
// and after Shutdown refuses with ErrServerClosed.
func TestServeConnServesAPipe(t *testing.T) {
	ts := newTestServer(t)
	srv := ts.Server
	name := srv.listeners[0].Name
	var pipes atomic.Int64
	dial := func(_ context.Context, _, _ string) (net.Conn, error) {
		client, served := net.Pipe()
		if err := srv.ServeConn(name, served); err != nil {
			client.Close()
			return nil, err
		}
		pipes.Add(1)
		return client, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.Dialer(dial), kgo.DefaultProduceTopic("pipe"), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics("pipe"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("in process")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "in process" {
		t.Fatalf("read back %v", recs)
	}
	if pipes.Load() == 0 {
		t.Fatal("no connection went through ServeConn")
	}
	client, served := net.Pipe()
	defer client.Close()
	if err := srv.ServeConn("NOPE", served); err == nil {
		t.Fatal("ServeConn on an unknown listener: no error")
	}
	ts.stop(t)
	client2, served2 := net.Pipe()
	defer client2.Close()
	if err := srv.ServeConn(name, served2); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("ServeConn after Shutdown: %v, want ErrServerClosed", err)
	}
	if _, err := client2.Read(make([]byte, 1)); err == nil {
		t.Fatal("the refused pipe is still open")
	}
}
