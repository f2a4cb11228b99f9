package kafka

// DescribeUserScramCredentials (key 50), version 0.
//
// Lists users' SCRAM mechanisms and iterations (never salts or keys): the
// users asked for, or every user with a credential when none is named.
// An unknown user is RESOURCE_NOT_FOUND, a user named twice
// DUPLICATE_RESOURCE, with Kafka's messages. Without a credential store
// (Config.Users nil) the whole request fails with SECURITY_DISABLED.

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ferry-mq/ferry/server/auth"
)

// ACLs: DESCRIBE on the cluster, as Kafka's.
func (s *Server) handleDescribeUserScramCredentials(ctx context.Context, kreq kmsg.Request) kmsg.Response {
	req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !s.authorizedCluster(ctx, auth.OpDescribe) {
		resp.ErrorCode = codeClusterAuthFailed
		resp.ErrorMessage = kmsg.StringPtr("DESCRIBE on the cluster is needed to describe users' credentials")
		return resp
	}
	store := s.cfg.Users
	if store == nil {
		resp.ErrorCode = kerr.SecurityDisabled.Code
		resp.ErrorMessage = kmsg.StringPtr("this listener has no credential store")
		return resp
	}
	if len(req.Users) == 0 {
		for _, name := range store.Users() {
			resp.Results = append(resp.Results, describedUser(name, store.User(name)))
		}
		return resp
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	reported := map[string]bool{}
	for _, u := range req.Users {
		if reported[u.Name] {
			continue
		}
		reported[u.Name] = true
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u.Name
		creds := store.User(u.Name)
		switch {
		case count[u.Name] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u.Name)
		case len(creds) == 0:
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + u.Name)
		default:
			r = describedUser(u.Name, creds)
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

func describedUser(name string, creds auth.UserCredentials) kmsg.DescribeUserSCRAMCredentialsResponseResult {
	r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
	r.User = name
	for m, c := range creds {
		info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		info.Mechanism, info.Iterations = int8(m), int32(c.Iterations)
		r.CredentialInfos = append(r.CredentialInfos, info)
	}
	sort.Slice(r.CredentialInfos, func(i, j int) bool { return r.CredentialInfos[i].Mechanism < r.CredentialInfos[j].Mechanism })
	return r
}
