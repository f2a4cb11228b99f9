// Package cluster is the controller's driver: the thin I/O layer between
// ZooKeeper, the brokers and the decision code of replication/controller
// (whose doc lists the duties this package performs). It follows Kafka
// 2.8's KafkaController event loop, ControllerEventManager and
// ControllerChannelManager.
//
// # Flow
//
// Run campaigns: TryElect creates /controller and bumps /controller_epoch;
// when another broker holds it, Run waits on the /controller watch (or a
// new session) and tries again. A win starts a term:
//
//	watches set (brokers, topics, ISR notifications) → snapshot read →
//	Step(Elected) → loop: watch or ask → Event → Step → actions, in order:
//	  WritePartitionState  fenced create/update → StateWritten | StateWriteConflict | Resigned
//	  ReadPartitionStates  reads               → PartitionStatesRead
//	  Send*                a broker's queue (below)
//	  AnswerControlledShutdown                 → the waiting ControlledShutdown calls
//
// A run of writes one Step returns goes out together: a topic's new state
// znodes in one CreatePartitionStates, updates up to MaxConcurrentWrites
// at a time, pipelined on the session (the controller has at most one
// write out per partition, so they are independent); outcomes are fed
// back in the actions' order. Each outcome is fed back before the next
// watch is read, so the Controller's decisions see their own results in
// order. While ZooKeeper is unreachable a write blocks the loop up to the
// zookeeper client's operation timeout, as Kafka's event thread blocks. A term ends when
// ctx ends (it deletes /controller, fenced, so a successor is elected at
// once), when /controller is read to be another broker's or absent, when
// the session expires, or when a fenced write or delete reports
// ErrControllerMoved; its senders stop and their queues are dropped, and
// waiting ControlledShutdown calls get controller.ErrNotController.
//
// # Requests to brokers
//
// One queue and one goroutine per live broker (Kafka's RequestSendThread)
// send LeaderAndIsr v4, UpdateMetadata v6 and StopReplica v3, encoded by
// kmsg, over one connection (replication/wire; TLS through Config.Dial
// when the inter-broker listener is SSL) to the broker's endpoint in
// /brokers/ids (Config.Listener, else its first endpoint), in
// order and one at a time. A request that fails (dial, write, read,
// timeout) is sent again on a new connection after a backoff doubling
// from RetryBackoff to MaxRetryBackoff, until it is delivered or the broker
// leaves /brokers/ids (or registers again with another epoch): then its
// queue is dropped, as Kafka's removeBroker does, and a returning broker
// gets its roles anew from the controller. Error codes in an answer are
// logged, not retried: the broker has heard the controller. Each new
// connection first asks ApiVersions (v0), as Kafka's NetworkClient does; a
// request the broker does not serve at the version encoded is dropped
// with an error logged, since it could never be delivered and would hold
// up the queue behind it.
//
// Memory: a queued request is merged into the one queued before it when
// both are LeaderAndIsr (or both UpdateMetadata, or both StopReplica with
// the same delete flag): a partition's later state replaces its earlier
// one, which is what the broker would have ended with. So a broker that
// does not answer holds at most one request per run of a kind, each no
// larger than the partitions it names; past MaxQueuedRequests (alternating
// kinds) the oldest are dropped with an error logged.
//
// # Fencing
//
// A killed broker's session lives on for up to zookeeper.session.timeout.ms
// (18 s), but its listener refuses connections at once. So each broker
// sender has a second goroutine, its listener probe (liveness.go), that
// connects to the broker's registered endpoint every ProbeInterval (200
// ms) and closes the connection at once. Refused connects (ECONNREFUSED)
// in a row, at least 3 over FenceAfter (400 ms), from a broker
// seen accepting under that registration or registered over 5 s ago (a
// starting broker registers before it listens), are the evidence: the
// term steps BrokerFenced and the controller moves the broker's
// leaderships as for a broker gone from /brokers/ids. A timeout, an
// unreachable host or a failed handshake is no evidence: a frozen or
// partitioned broker waits for its session. The probe then waits for the
// listener to accept and answer ApiVersions (BrokerUnfenced); a restart
// registers anew, which BrokersChanged handles.
//
// The controller cannot probe itself. While a broker campaigns, it probes
// the listener of the broker holding /controller the same way and, on the
// same evidence, deletes /controller (zookeeper.DeposeController, checked
// against the /controller_epoch version read before it, so a controller
// elected since is untouched): the brokers elect a new controller at once,
// whose probes fence the dead one. A deposed controller that is alive
// after all has its writes fenced by the new epoch, and resigns; one that
// wins again under the same registration is not deposed again by this
// broker (its session decides).
//
// # Goroutines
//
//   - Run's (the caller's): the campaign, then each term's event loop; it
//     alone owns the controller.Controller, the senders and the topic
//     table.
//   - two per other live broker while a term lasts: its request sender
//     and its listener probe (one for this broker: no probe).
//   - while campaigning, one probing the listener of the broker holding
//     /controller (controllerProbe).
//   - one per topic while a term lasts: forwards the topic's WatchTopic
//     snapshots to the event loop (PartitionsAdded).
//   - the zookeeper package's own, one per watch.
//
// # Deviations from Kafka
//
// The broker epoch (KIP-380) is the registration's timestamp, since the
// zookeeper package does not expose the znode's czxid; the requests carry
// -1 (unknown), which a broker does not check. The controller follows
// /config/changes itself (TopicConfigChanged, for
// unclean.leader.election.enable) where Kafka's controller hears of them
// from its own broker's config manager.
// ISR notifications are deleted right after their states are read, before
// the controller acts on them: a controller that fails in between leaves
// nothing undone, since its successor reads every state.
package cluster
