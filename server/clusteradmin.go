package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ferry-mq/ferry/replication/controller"
)

// Admin is the one home of the cluster's admin operations, for both
// listeners: leader elections and partition reassignments (the
// controller's), and for the HTTP gateway the reassignment's plan,
// throttle and progress (reassignadmin.go). The Kafka listener encodes
// ElectLeaders and Alter/ListPartitionReassignments over it, the HTTP
// gateway its /admin routes; neither holds the operations' rules.
//
// Where an operation for the controller goes:
//
//   - this broker is the controller: straight to its controller driver
//     (replication/cluster.Controller);
//   - another broker is (this broker's cluster view names it): sent to it
//     over the inter-broker client (Peers, server/forward), as Kafka's
//     KRaft brokers forward admin requests to the controller (KIP-590),
//     asked again while the answer is NOT_CONTROLLER or none, up to
//     ForwardTimeout; then ErrControllerNotAvailable (HTTP: 503 with
//     Retry-After);
//   - a single node (no controller): answered here, its one replica being
//     every partition's preferred leader and only possible assignment.
//
// The Kafka listener uses Admin.AtThisBroker, which never forwards: a
// Kafka client sends these requests to the broker Metadata names
// controller, and Kafka's answer when that broker no longer is one is
// NOT_CONTROLLER, for the client to look again.
type Admin struct {
	b       *Broker
	ctl     ControllerAdmin // nil: a single node
	peers   AdminPeers      // nil: never forward
	timeout time.Duration
}

// ControllerAdmin is the controller's side of the admin operations:
// replication/cluster.Controller on the controller (ErrNotController on
// another broker), and AdminPeers.Controller sending them to it.
type ControllerAdmin interface {
	// ElectLeaders runs preferred or unclean elections for partitions
	// (nil: all) and returns each one's outcome (nil: elected;
	// controller.ErrElectionNotNeeded, …) once written.
	ElectLeaders(ctx context.Context, typ controller.ElectionType, partitions []controller.TopicPartition) (map[controller.TopicPartition]error, error)
	// AlterReassignments starts, changes or (a nil target) cancels each
	// partition's reassignment.
	AlterReassignments(ctx context.Context, targets map[controller.TopicPartition][]int32) (map[controller.TopicPartition]error, error)
	// Reassignments are the partitions being moved.
	Reassignments(ctx context.Context) (map[controller.TopicPartition]controller.Assignment, error)
}

// AdminPeers reaches the other brokers for Admin: the controller, when
// it is another broker, and each broker's replica sizes for a move's
// progress. server/forward implements it over the Kafka protocol, through
// the guard that cuts the connections to brokers the cluster declared
// dead.
type AdminPeers interface {
	// Controller sends the operations to broker id, the controller as
	// this broker's cluster view names it; it answers ErrNotController
	// when it no longer is.
	Controller(id int32) ControllerAdmin
	// LogDirSizes are the sizes in bytes of broker's replicas of
	// partitions (those it holds; Kafka's DescribeLogDirs).
	LogDirSizes(ctx context.Context, broker int32, partitions []controller.TopicPartition) (map[controller.TopicPartition]int64, error)
}

// AdminConfig describes an Admin.
type AdminConfig struct {
	// Controller is this broker's controller driver; nil: a single node.
	Controller ControllerAdmin
	// Peers reach the other brokers; nil: operations for the controller
	// answer ErrNotController on a broker that is not it, and a move's
	// progress counts this broker's replicas only.
	Peers AdminPeers
	// ForwardTimeout bounds an operation sent to another broker (0:
	// DefaultAdminForwardTimeout).
	ForwardTimeout time.Duration
}

// DefaultAdminForwardTimeout bounds an operation sent to the controller:
// long enough for an election written to ZooKeeper on a loaded machine,
// short enough that a controller that stopped answering is reported
// before an HTTP client gives up.
const DefaultAdminForwardTimeout = 10 * time.Second

// ErrControllerNotAvailable: the operation was for the controller, which
// is another broker that did not answer in time (frozen, partitioned
// away, or being replaced). Retry once the cluster has elected one; HTTP
// answers 503 with Retry-After.
var ErrControllerNotAvailable = errors.New("controller not available")

// NewAdmin builds the admin operations of broker b.
func NewAdmin(b *Broker, cfg AdminConfig) *Admin {
	return &Admin{b: b, ctl: cfg.Controller, peers: cfg.Peers, timeout: cmp.Or(cfg.ForwardTimeout, DefaultAdminForwardTimeout)}
}

// AtThisBroker is a, answering only what this broker can: the Kafka
// listener's view, where a request for the controller sent to another
// broker answers NOT_CONTROLLER (ErrNotController) as in Kafka.
func (a *Admin) AtThisBroker() *Admin {
	c := *a
	c.peers = nil
	return &c
}

// toController runs op on this broker's controller driver and, when
// another broker is the controller, sends it there through the peers,
// asking again (the view's controller may have changed meanwhile) while
// the answer is NOT_CONTROLLER or none, up to the forward timeout.
func toController[R any](ctx context.Context, a *Admin, what string, op func(context.Context, ControllerAdmin) (R, error)) (R, error) {
	r, err := op(ctx, a.ctl)
	if !errors.Is(err, controller.ErrNotController) || a.peers == nil {
		return r, err
	}
	fctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		id := a.controllerID()
		switch {
		case id < 0:
			err = fmt.Errorf("%w: no controller is known", controller.ErrNotController)
		default:
			to := a.ctl
			if id != a.b.BrokerID() {
				to = a.peers.Controller(id)
			}
			r, err = op(fctx, to)
			if err == nil || !retriableAtController(err) && fctx.Err() == nil {
				return r, err
			}
		}
		wait.Reset(adminRetryBackoff)
		select {
		case <-wait.C:
		case <-fctx.Done():
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			// The controller did not answer, or is being replaced: the
			// caller's to retry once the cluster has elected one.
			if errors.Is(err, ErrControllerNotAvailable) {
				return r, fmt.Errorf("%s: no answer from the controller (broker %d) within %v: %w", what, id, a.timeout, err)
			}
			return r, fmt.Errorf("%w: %s: no answer from the controller (broker %d) within %v: %v",
				ErrControllerNotAvailable, what, id, a.timeout, err)
		}
	}
}

// controllerID is the controller this broker's cluster view names (-1:
// none yet).
func (a *Admin) controllerID() int32 {
	if view, ok := a.b.Cluster(); ok {
		return view.ControllerID
	}
	return -1
}

// adminRetryBackoff is the wait before asking the controller again.
const adminRetryBackoff = 100 * time.Millisecond

// retriableAtController: the controller moved (NOT_CONTROLLER) or was not
// reached (the peers answer ErrControllerNotAvailable); any other answer
// (the partitions' outcomes, a refused request) is final.
func retriableAtController(err error) bool {
	return errors.Is(err, controller.ErrNotController) || errors.Is(err, ErrControllerNotAvailable)
}

// ElectLeaders runs preferred or unclean elections for partitions (nil:
// every partition) and returns each partition's outcome.
func (a *Admin) ElectLeaders(ctx context.Context, typ controller.ElectionType, partitions []controller.TopicPartition) (map[controller.TopicPartition]error, error) {
	if typ != controller.PreferredElection && typ != controller.UncleanElection {
		return nil, fmt.Errorf("%w: unknown election type %d", ErrInvalidRequest, typ)
	}
	if a.ctl == nil {
		return a.singleNodeElections(partitions), nil
	}
	return toController(ctx, a, "elect leaders", func(ctx context.Context, c ControllerAdmin) (map[controller.TopicPartition]error, error) {
		return c.ElectLeaders(ctx, typ, partitions)
	})
}

// singleNodeElections: every partition's one replica is its preferred
// leader and leads.
func (a *Admin) singleNodeElections(parts []controller.TopicPartition) map[controller.TopicPartition]error {
	out := map[controller.TopicPartition]error{}
	if parts == nil {
		for _, name := range a.b.Topics() {
			n, err := a.b.PartitionCount(name)
			if err != nil {
				continue
			}
			for p := range n {
				parts = append(parts, controller.TopicPartition{Topic: name, Partition: p})
			}
		}
	}
	for _, tp := range parts {
		if _, err := a.b.Partition(tp.Topic, tp.Partition); err != nil {
			out[tp] = controller.ErrUnknownPartition
			continue
		}
		out[tp] = controller.ErrElectionNotNeeded
	}
	return out
}

// AlterReassignments starts, changes or (a nil target) cancels each
// partition's reassignment; each answer is nil or why not, once the
// topic znodes hold the new replica sets.
func (a *Admin) AlterReassignments(ctx context.Context, targets map[controller.TopicPartition][]int32) (map[controller.TopicPartition]error, error) {
	if a.ctl == nil {
		return a.singleNodeReassignments(targets), nil
	}
	return toController(ctx, a, "reassign partitions", func(ctx context.Context, c ControllerAdmin) (map[controller.TopicPartition]error, error) {
		return c.AlterReassignments(ctx, targets)
	})
}

// singleNodeReassignments: a single node has one broker, so a target of
// that broker alone changes nothing and any other is invalid.
func (a *Admin) singleNodeReassignments(targets map[controller.TopicPartition][]int32) map[controller.TopicPartition]error {
	self := a.b.BrokerID()
	out := map[controller.TopicPartition]error{}
	for tp, target := range targets {
		switch _, err := a.b.Partition(tp.Topic, tp.Partition); {
		case err != nil:
			out[tp] = controller.ErrUnknownPartition
		case target == nil:
			out[tp] = controller.ErrNoReassignmentInProgress
		case !slices.Equal(target, []int32{self}):
			out[tp] = fmt.Errorf("%w: a single node has broker %d only", controller.ErrInvalidReplicaAssignment, self)
		default:
			out[tp] = nil
		}
	}
	return out
}

// Reassignments are the partitions being moved (none on a single node).
func (a *Admin) Reassignments(ctx context.Context) (map[controller.TopicPartition]controller.Assignment, error) {
	if a.ctl == nil {
		return map[controller.TopicPartition]controller.Assignment{}, nil
	}
	return toController(ctx, a, "list reassignments", func(ctx context.Context, c ControllerAdmin) (map[controller.TopicPartition]controller.Assignment, error) {
		return c.Reassignments(ctx)
	})
}

// SortedPartitions are m's partitions by topic and partition, for
// answers listed in order.
func SortedPartitions[V any](m map[controller.TopicPartition]V) []controller.TopicPartition {
	return slices.SortedFunc(maps.Keys(m), func(x, y controller.TopicPartition) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
}
