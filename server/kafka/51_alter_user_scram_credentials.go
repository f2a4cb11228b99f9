package kafka

// AlterUserScramCredentials (key 51), version 0.
//
// Upserts and deletes SCRAM credentials. Clients send the salted password
// (never the password); the broker keeps only the verifier. One result per
// user: a user with any invalid operation has none applied. Kafka's
// errors: UNACCEPTABLE_CREDENTIAL for an empty name, iterations outside
// 4096–16384 or an empty salt; UNSUPPORTED_SASL_MECHANISM for an unknown
// mechanism; DUPLICATE_RESOURCE for a user and mechanism altered twice;
// RESOURCE_NOT_FOUND for deleting a credential that does not exist.
// Deviation: a name that cannot be a ZooKeeper znode ('/') is
// UNACCEPTABLE_CREDENTIAL.

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

// scramAlteration is one user's operations of a request.
type scramAlteration struct {
	upserts []auth.ScramCredential
	deletes []auth.ScramMechanism
	err     *kerr.Error
	msg     string
}

func (a *scramAlteration) fail(err *kerr.Error, msg string) {
	if a.err == nil {
		a.err, a.msg = err, msg
	}
}

// ACLs: ALTER on the cluster, as Kafka's; without it every user in the
// request is answered CLUSTER_AUTHORIZATION_FAILED and nothing changes.
func (s *Server) handleAlterUserScramCredentials(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	if !s.authorizedCluster(ctx, auth.OpAlter) {
		names := map[string]bool{}
		for _, d := range req.Deletions {
			names[d.Name] = true
		}
		for _, u := range req.Upsertions {
			names[u.Name] = true
		}
		for _, name := range slices.Sorted(maps.Keys(names)) {
			resp.Results = append(resp.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: name,
				ErrorCode: codeClusterAuthFailed, ErrorMessage: kmsg.StringPtr("ALTER on the cluster is needed to change users' credentials")})
		}
		return resp
	}
	var order []string
	users := map[string]*scramAlteration{}
	userOf := func(name string) *scramAlteration {
		a, ok := users[name]
		if !ok {
			a = &scramAlteration{}
			users[name] = a
			order = append(order, name)
		}
		return a
	}
	type pair struct {
		user string
		m    int8
	}
	seen := map[pair]bool{}
	check := func(a *scramAlteration, name string, m int8) (auth.ScramMechanism, bool) {
		if seen[pair{name, m}] {
			a.fail(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		}
		seen[pair{name, m}] = true
		if name == "" {
			a.fail(kerr.UnacceptableCredential, "Username must not be empty")
		} else if err := auth.CheckUserName(name); err != nil {
			a.fail(kerr.UnacceptableCredential, err.Error())
		}
		mech := auth.ScramMechanism(m)
		if mech != auth.ScramSHA256 && mech != auth.ScramSHA512 {
			a.fail(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
			return mech, false
		}
		return mech, true
	}
	for _, d := range req.Deletions {
		a := userOf(d.Name)
		if mech, ok := check(a, d.Name, d.Mechanism); ok {
			a.deletes = append(a.deletes, mech)
		}
	}
	for _, u := range req.Upsertions {
		a := userOf(u.Name)
		mech, ok := check(a, u.Name, u.Mechanism)
		if !ok {
			continue
		}
		switch {
		case u.Iterations < auth.MinScramIterations:
			a.fail(kerr.UnacceptableCredential, "Too few iterations")
			continue
		case u.Iterations > auth.MaxScramIterations:
			a.fail(kerr.UnacceptableCredential, "Too many iterations")
			continue
		case len(u.Salt) == 0 || len(u.SaltedPassword) != mech.Hash()().Size():
			a.fail(kerr.UnacceptableCredential, "Salt and salted password must be non-empty, the password the mechanism's hash size")
			continue
		}
		c, err := auth.ScramCredentialFromSaltedPassword(mech, u.SaltedPassword, u.Salt, int(u.Iterations))
		if err != nil {
			a.fail(kerr.UnacceptableCredential, err.Error())
			continue
		}
		a.upserts = append(a.upserts, c)
	}
	for _, name := range order {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = name
		if err, msg := s.applyScramAlteration(name, users[name]); err != nil {
			r.ErrorCode, r.ErrorMessage = err.Code, kmsg.StringPtr(msg)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// applyScramAlteration writes one user's operations, once all are valid.
func (s *Server) applyScramAlteration(name string, a *scramAlteration) (*kerr.Error, string) {
	store := s.cfg.Users
	if a.err != nil {
		return a.err, a.msg
	}
	if store == nil {
		return kerr.SecurityDisabled, "this listener has no credential store"
	}
	have := store.User(name)
	for _, m := range a.deletes {
		if _, ok := have[m]; !ok {
			return kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist"
		}
	}
	for _, m := range a.deletes {
		if err := store.Delete(name, m); err != nil && !errors.Is(err, auth.ErrUnknownUser) {
			s.logger.Warn("deleting a SCRAM credential", "user", name, "mechanism", m.String(), "err", err)
			return kerr.UnknownServerError, err.Error()
		}
	}
	for _, c := range a.upserts {
		if err := store.Upsert(name, c); err != nil {
			s.logger.Warn("storing a SCRAM credential", "user", name, "mechanism", c.Mechanism.String(), "err", err)
			return kerr.UnknownServerError, err.Error()
		}
	}
	s.logger.Info("SCRAM credentials altered", "user", name, "upserted", len(a.upserts), "deleted", len(a.deletes))
	return nil, ""
}
