package controller

import (
	"fmt"
	"testing"
)

// BenchmarkControlledShutdown drains one broker of 3 leading a third of
// 3,000 partitions (RF 3), every write succeeding in order.
func BenchmarkControlledShutdown(b *testing.B) {
	const partitions = 3000
	for range b.N {
		b.StopTimer()
		s := newSim(b)
		s.run(Elected{Epoch: 1, EpochZkVersion: 1, Snapshot: Snapshot{Brokers: brokers(1, 2, 3)}})
		tp := Topic{Name: "t", Partitions: map[int32]Assignment{}}
		for p := int32(0); p < partitions; p++ {
			tp.Partitions[p] = Assignment{Replicas: []int32{p%3 + 1, (p+1)%3 + 1, (p+2)%3 + 1}}
		}
		s.run(TopicCreated{Topic: tp})
		b.StartTimer()
		sent := s.run(ControlledShutdownRequested{Broker: 1, BrokerEpoch: -1})
		if a := ofType[AnswerControlledShutdown](sent); len(a) != 1 || len(a[0].Remaining) != 0 {
			b.Fatal(fmt.Sprint("answer ", a))
		}
	}
}
