package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// txnProducerCliEnv, set, makes this test binary play librdkafka's
// TransactionProducerCli (its tests/java/TransactionProducerCli.java, the
// producer of test 0098's first half) with franz-go in the Java client's
// place: same arguments, commands and transactional ids, so librdkafka's
// read_committed consumer is checked against transactions another client
// wrote. Arguments: the bootstrap servers, then commands, one an
// argument: "topic,T", "testid,ID", "sleep,MS", "exit,CODE" (ends at
// once: open transactions stay open, nothing buffered is sent) and
// "producerN, PARTITION (-1: by key), ID_START, COUNT, TYPE, DoFlush|DontFlush"
// with TYPE one of None (an idempotent producer), BeginAbort, BeginCommit,
// BeginOpen, ContinueAbort, ContinueCommit, ContinueOpen.
const txnProducerCliEnv = "FERRY_TXN_PRODUCER_CLI"

// runTxnProducerCli runs the commands and returns the exit status.
func runTxnProducerCli(args []string) int {
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "TransactionProducerCli: usage: BOOTSTRAP COMMAND...")
		return 2
	}
	cli := &txnProducerCli{seeds: strings.Split(args[0], ","), producers: map[string]*kgo.Client{}}
	for _, a := range args[1:] {
		fmt.Printf("TransactionProducerCli (franz-go): command: '%s'\n", a)
		if code, done := cli.do(a); done {
			return code
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	status := 0
	for name, p := range cli.producers {
		// Java's close() waits for what was sent; kgo's Close does not.
		if err := p.Flush(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "TransactionProducerCli: %s: flush before close: %v\n", name, err)
			status = 1
		}
		p.Close()
	}
	return status
}

type txnProducerCli struct {
	seeds         []string
	topic, testid string
	producers     map[string]*kgo.Client
	failed        firstError // of the records produced since the last check
}

// firstError keeps the first error of produce promises.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) note(_ *kgo.Record, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *firstError) take() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.err
	f.err = nil
	return err
}

// do runs one command; done reports that the process must end with code.
func (c *txnProducerCli) do(arg string) (code int, done bool) {
	cmd := strings.Split(arg, ",")
	for i := range cmd {
		cmd[i] = strings.TrimSpace(cmd[i])
	}
	fail := func(err error) (int, bool) {
		fmt.Fprintf(os.Stderr, "TransactionProducerCli: %q: %v\n", arg, err)
		return 1, true
	}
	switch {
	case len(cmd) == 2 && cmd[0] == "sleep":
		ms, err := strconv.ParseInt(cmd[1], 0, 32)
		if err != nil {
			return fail(err)
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
	case len(cmd) == 2 && cmd[0] == "exit":
		n, err := strconv.ParseInt(cmd[1], 0, 32)
		if err != nil {
			return fail(err)
		}
		return int(n), true
	case len(cmd) == 2 && cmd[0] == "topic":
		c.topic = cmd[1]
	case len(cmd) == 2 && cmd[0] == "testid":
		c.testid = cmd[1]
	case len(cmd) == 6 && strings.HasPrefix(cmd[0], "producer"):
		if err := c.produce(cmd); err != nil {
			return fail(err)
		}
	default:
		return fail(errors.New("unknown command"))
	}
	return 0, false
}

// cliPartition carries a record's requested partition to the partitioner.
type cliPartition struct{}

// produce is TransactionProducerCli's makeTestMessages: COUNT records
// keyed ID_START+i, each with the payload 10 20 30 40.
func (c *txnProducerCli) produce(cmd []string) error {
	var nums [3]int64
	for i := range nums {
		n, err := strconv.ParseInt(cmd[1+i], 0, 32)
		if err != nil {
			return err
		}
		nums[i] = n
	}
	partition, idStart, count := int32(nums[0]), nums[1], int(nums[2])
	kind, flush := cmd[4], cmd[5] == "DoFlush"
	p, err := c.producer(cmd[0], kind != "None")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if strings.HasPrefix(kind, "Begin") {
		if err := p.BeginTransaction(); err != nil {
			return fmt.Errorf("begin transaction: %w", err)
		}
	}
	for i := range count {
		r := &kgo.Record{Topic: c.topic, Key: []byte{byte(idStart + int64(i))}, Value: []byte{0x10, 0x20, 0x30, 0x40},
			Context: context.WithValue(context.Background(), cliPartition{}, partition)}
		// Not ctx: an unflushed record outlives this command, as a Java
		// send does.
		p.Produce(context.Background(), r, c.failed.note)
	}
	produced := func() error {
		if err := c.failed.take(); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		return nil
	}
	if flush {
		if err := p.Flush(ctx); err != nil {
			return err
		}
		if !strings.HasSuffix(kind, "Abort") {
			if err := produced(); err != nil {
				return err
			}
		}
	}
	switch kind {
	case "BeginAbort", "ContinueAbort":
		// Java's abortTransaction drops what is not yet sent.
		if err := p.AbortBufferedRecords(ctx); err != nil {
			return err
		}
		c.failed.take() // the dropped records' errors
		return p.EndTransaction(ctx, kgo.TryAbort)
	case "BeginCommit", "ContinueCommit":
		if err := p.Flush(ctx); err != nil {
			return err
		}
		if err := produced(); err != nil {
			return err
		}
		return p.EndTransaction(ctx, kgo.TryCommit)
	}
	return nil
}

// producer is the named producer, created on first use as the Java CLI
// creates it: idempotent, linger 5 ms, and for a transactional one the
// id test-transactional-id-<testid>-<name>.
func (c *txnProducerCli) producer(name string, transactional bool) (*kgo.Client, error) {
	if p, ok := c.producers[name]; ok {
		return p, nil
	}
	keyed := kgo.StickyKeyPartitioner(nil) // murmur2 of the key, as Java's default partitioner
	opts := []kgo.Opt{kgo.SeedBrokers(c.seeds...), kgo.ProducerLinger(5 * time.Millisecond),
		kgo.RecordPartitioner(kgo.BasicConsistentPartitioner(func(topic string) func(*kgo.Record, int) int {
			byKey := keyed.ForTopic(topic)
			return func(r *kgo.Record, n int) int {
				if want, _ := r.Context.Value(cliPartition{}).(int32); want >= 0 {
					return int(want)
				}
				return byKey.Partition(r, n)
			}
		}))}
	if transactional {
		opts = append(opts, kgo.ClientID("transactional-producer-"+name),
			kgo.TransactionalID("test-transactional-id-"+c.testid+"-"+name))
	} else {
		opts = append(opts, kgo.ClientID("producer-"+name))
	}
	p, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	c.producers[name] = p
	return p, nil
}
