// Package zookeeper is ferry's ZooKeeper layer, and the only package that
// imports a ZooKeeper client: no zk type appears in its API. It reads and
// writes Kafka's ZooKeeper-era layout with the JSON Kafka 2.8 writes, so
// an operator's zkCli.sh (and Kafka's own tools) see what a Kafka cluster
// would show:
//
//	/cluster/id                          {"version":"1","id":"<uuid>"}
//	/brokers/ids/<id>        ephemeral   broker registration, version 5
//	/controller              ephemeral   {"version":1,"brokerid":N,"timestamp":"ms"}
//	/controller_epoch                    "N"
//	/brokers/topics/<t>                  replica assignment, version 3 with topic_id
//	/brokers/topics/<t>/partitions/<p>/state
//	                                     {"controller_epoch":E,"leader":L,"version":1,"leader_epoch":LE,"isr":[…]}
//	/config/topics/<t>                   {"version":1,"config":{…}}
//	/config/{users,clients,ips}/<name>   the same, for SCRAM verifiers and quotas
//	/ferry/tokens/<id>                   ferry's HTTP API tokens
//	/isr_change_notification/isr_change_<seq>
//	                                     {"version":1,"partitions":[{"topic":…,"partition":…}]}
//	/admin/delete_topics/<t>
//	/admin/reassign_partitions           {"version":1,"partitions":[{"topic":…,"partition":…,"replicas":[…]}]}
//
// Fencing follows Kafka 2.x: TryElect creates /controller and bumps
// /controller_epoch in one multi, and every controller write runs in a
// multi behind a check of /controller_epoch's znode version (the
// Election's EpochVersion), so a deposed controller's writes fail with
// ErrControllerMoved; partition state writes are also conditional on the
// state znode's version (ErrStalePartitionState). A leader's own ISR
// write (UpdateISR) is conditional on the version only, followed by an
// isr_change notification for the controller.
//
// The entity configs (users, clients, ips) and tokens are znodes and
// bytes here; what their keys mean is their owners': server/auth's
// ZKUserStore and ZKTokenStore, server/quota's ZKStore, server/acl's
// ZKStore. Replication never imports the core.
//
// A Client is one session. Operations retry while the connection is down,
// up to twice the session timeout. Session changes arrive on Events;
// after an expiry the client registers the broker again by itself, then
// reports NewSession so the caller can re-run what its session owned (the
// controller election). Watches (WatchBrokers, WatchController, …)
// deliver snapshots, keep only the latest, and are set again in a new
// session. Every znode's bytes are untrusted input: decoders bound their
// size and report ErrCorrupt.
//
// Goroutines: per Client, one reads the library's session events into a
// queue and one handles them (re-registration, Events); one per Watch.
// Close stops them all.
package zookeeper
