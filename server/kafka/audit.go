package kafka

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

// The audit log on the Kafka listener (the HTTP gateway's is api/audit.go,
// with the same msg and fields): one line per administrative request —
// topics, records deleted, configs, partitions, groups deleted, elections,
// moves, ACLs, quotas, users — with its outcome, and one per refusal by
// the ACLs. A client retrying a refused request would flood the log, so a
// refusal of the same principal, operation and resource is logged at most
// once a minute.

// adminAPIs are the requests that change the cluster's administration.
var adminAPIs = map[int16]bool{
	int16(kmsg.CreateTopics): true, int16(kmsg.DeleteTopics): true, int16(kmsg.DeleteRecords): true,
	int16(kmsg.AlterConfigs): true, int16(kmsg.IncrementalAlterConfigs): true, int16(kmsg.CreatePartitions): true,
	int16(kmsg.DeleteGroups): true, int16(kmsg.OffsetDelete): true, int16(kmsg.ElectLeaders): true,
	int16(kmsg.AlterPartitionAssignments): true, int16(kmsg.CreateACLs): true, int16(kmsg.DeleteACLs): true,
	int16(kmsg.AlterClientQuotas): true, int16(kmsg.AlterUserSCRAMCredentials): true,
}

// auditAdmin logs an administrative request once served.
func (s *Server) auditAdmin(ctx context.Context, key int16, resp kmsg.Response) {
	if !adminAPIs[key] || resp == nil {
		return
	}
	outcome, failures := "allowed", 0
	eachErrorCode(resp, func(code int16) {
		failures++
		if code == codeTopicAuthFailed || code == codeGroupAuthFailed || code == codeClusterAuthFailed || code == codeTxnIDAuthFailed {
			outcome = "denied"
		} else if outcome == "allowed" {
			outcome = "failed"
		}
	})
	rc := requestClientFrom(ctx)
	s.logger.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("principal", auth.PrincipalFrom(ctx).String()),
		slog.String("host", requestHost(ctx)), slog.String("api", kmsg.NameForKey(key)), slog.String("client_id", rc.id),
		slog.String("outcome", outcome), slog.Int("errors", failures))
}

// deniedLog remembers when each refusal was last logged.
type deniedLog struct {
	mu   sync.Mutex
	last map[string]time.Time
}

const (
	deniedLogEvery = time.Minute
	deniedLogKeys  = 10000 // bounds the map: past it, it starts again
)

// due reports whether the refusal named key should be logged now.
func (d *deniedLog) due(key string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.last[key]; ok && now.Sub(t) < deniedLogEvery {
		return false
	}
	if d.last == nil || len(d.last) >= deniedLogKeys {
		d.last = map[string]time.Time{}
	}
	d.last[key] = now
	return true
}

// auditDenied logs a refusal by the ACLs (at most once a minute each).
func (s *Server) auditDenied(ctx context.Context, act auth.Action) {
	key := act.Principal.String() + "\x00" + act.Operation.String() + "\x00" + act.Resource.String()
	if !s.denials.due(key, time.Now()) {
		return
	}
	s.logger.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("principal", act.Principal.String()),
		slog.String("host", act.Host), slog.String("operation", act.Operation.String()),
		slog.String("resource", act.Resource.String()), slog.String("client_id", requestClientFrom(ctx).id),
		slog.String("outcome", "denied"))
}
