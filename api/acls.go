package api

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/ferry-mq/ferry/server/acl"
	"github.com/ferry-mq/ferry/server/auth"
)

// ACLs over HTTP: the same core (server/acl.Manager) and the same rules as
// Kafka's DescribeAcls, CreateAcls and DeleteAcls, and the same
// permission to use them: DESCRIBE on the cluster to list, ALTER to
// change, for the request's principal (auth.PrincipalFrom, ANONYMOUS
// unless an authenticating middleware set one).

// Error codes of the ACL routes.
const (
	codeACLForbidden = 40304 // the principal may not DESCRIBE (list) or ALTER (change) the cluster
	codeInvalidACL   = 42208 // a binding or filter Kafka would refuse (INVALID_REQUEST)
	codeSecurityOff  = 50101 // no authorizer is configured (Kafka's SECURITY_DISABLED)
)

// ACLBinding is one ACL.
type ACLBinding struct {
	ResourceType string `json:"resource_type" example:"TOPIC"`
	ResourceName string `json:"resource_name" example:"orders"`
	// PatternType LITERAL (the default; name "*" is every resource) or
	// PREFIXED.
	PatternType string `json:"pattern_type" example:"LITERAL"`
	Principal   string `json:"principal" example:"User:alice"`
	// Host is an IP address or "*" (the default).
	Host      string `json:"host" example:"*"`
	Operation string `json:"operation" example:"READ"`
	// Permission ALLOW (the default) or DENY.
	Permission string `json:"permission" example:"ALLOW"`
}

// ACLFilter selects bindings; an absent field matches every value.
type ACLFilter struct {
	ResourceType string  `json:"resource_type,omitempty" example:"TOPIC"`
	ResourceName *string `json:"resource_name,omitempty" example:"orders"`
	// PatternType ANY (the default), MATCH (the bindings that apply to
	// resource_name: literal, "*" and prefixes), LITERAL or PREFIXED.
	PatternType string  `json:"pattern_type,omitempty" example:"MATCH"`
	Principal   *string `json:"principal,omitempty" example:"User:alice"`
	Host        *string `json:"host,omitempty" example:"*"`
	Operation   string  `json:"operation,omitempty" example:"READ"`
	Permission  string  `json:"permission,omitempty" example:"ALLOW"`
}

// ACLList is the answer of every ACL route.
type ACLList struct {
	ACLs []ACLBinding `json:"acls"`
}

type createACLsBody struct {
	ACLs []ACLBinding `json:"acls"`
}

// listACLs serves GET /admin/acls.
//
//	@Summary		List ACLs
//	@Description	The bindings the filter in the query selects (every binding without one), as Kafka's DescribeAcls; the caller needs DESCRIBE on the cluster.
//	@Description	Names are case-insensitive.
//	@Tags			cluster
//	@Produce		json
//	@Param			resource_type	query		string	false	"TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, SUBJECT (default any)"
//	@Param			resource_name	query		string	false	"the resource's name (default any)"
//	@Param			pattern_type	query		string	false	"ANY (default), MATCH, LITERAL, PREFIXED"
//	@Param			principal		query		string	false	"User:alice"
//	@Param			host			query		string	false	"an IP address or *"
//	@Param			operation		query		string	false	"READ, WRITE, …, ALL (default any)"
//	@Param			permission		query		string	false	"ALLOW, DENY (default any)"
//	@Success		200				{object}	ACLList
//	@Failure		403				{object}	errorBody	"40304: the principal may not DESCRIBE the cluster"
//	@Failure		422				{object}	errorBody	"42208: a filter value is not valid"
//	@Failure		501				{object}	errorBody	"50101: ACLs are off (no authorizer.class.name)"
//	@Router			/admin/acls [get]
func (g *Gateway) listACLs(w http.ResponseWriter, r *http.Request) {
	if !g.aclsAllowed(w, r, auth.OpDescribe) {
		return
	}
	f, err := filterFromQuery(r.URL.Query())
	var bs []acl.Binding
	if err == nil {
		bs, err = g.cfg.ACLs.Describe(f)
	}
	if err != nil {
		writeACLError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, typeJSON, aclList(bs))
}

// createACLs serves POST /admin/acls.
//
//	@Summary		Create ACLs
//	@Description	Stores every binding of the body (on a cluster, in ZooKeeper, whence every broker applies it), as Kafka's CreateAcls; the caller needs ALTER on the cluster. All are checked first: one invalid binding creates none. Creating a binding that exists succeeds.
//	@Tags			cluster
//	@Accept			json
//	@Produce		json
//	@Param			body	body		createACLsBody	true	"the bindings"
//	@Success		201		{object}	ACLList
//	@Failure		400		{object}	errorBody	"40001: the body is not JSON of this shape"
//	@Failure		403		{object}	errorBody	"40304: the principal may not ALTER the cluster"
//	@Failure		422		{object}	errorBody	"42208: a binding is not valid"
//	@Failure		501		{object}	errorBody	"50101: ACLs are off (no authorizer.class.name)"
//	@Router			/admin/acls [post]
func (g *Gateway) createACLs(w http.ResponseWriter, r *http.Request) {
	if !g.aclsAllowed(w, r, auth.OpAlter) {
		return
	}
	var body createACLsBody
	if !decodeBody(w, r, &body) {
		return
	}
	bs := make([]acl.Binding, 0, len(body.ACLs))
	for i, j := range body.ACLs {
		b, err := j.binding()
		if err == nil {
			err = b.Validate()
		}
		if err != nil {
			writeACLError(w, fmt.Errorf("acls[%d]: %w", i, err))
			return
		}
		bs = append(bs, b)
	}
	for i, err := range g.cfg.ACLs.Create(bs) {
		if err != nil {
			writeACLError(w, fmt.Errorf("acls[%d]: %w", i, err))
			return
		}
	}
	writeJSON(w, http.StatusCreated, typeJSON, aclList(bs))
}

// deleteACLs serves DELETE /admin/acls.
//
//	@Summary		Delete ACLs
//	@Description	Removes every binding the filter in the body selects (`{}` selects all), as Kafka's DeleteAcls, and answers those removed; the caller needs ALTER on the cluster.
//	@Tags			cluster
//	@Accept			json
//	@Produce		json
//	@Param			body	body		ACLFilter	true	"which bindings"
//	@Success		200		{object}	ACLList
//	@Failure		400		{object}	errorBody	"40001: the body is not JSON of this shape"
//	@Failure		403		{object}	errorBody	"40304: the principal may not ALTER the cluster"
//	@Failure		422		{object}	errorBody	"42208: a filter value is not valid"
//	@Failure		501		{object}	errorBody	"50101: ACLs are off (no authorizer.class.name)"
//	@Router			/admin/acls [delete]
func (g *Gateway) deleteACLs(w http.ResponseWriter, r *http.Request) {
	if !g.aclsAllowed(w, r, auth.OpAlter) {
		return
	}
	var body ACLFilter
	if !decodeBody(w, r, &body) {
		return
	}
	f, err := body.filter()
	if err != nil {
		writeACLError(w, err)
		return
	}
	d := g.cfg.ACLs.Delete([]acl.Filter{f})[0]
	if d.Err != nil {
		writeACLError(w, d.Err)
		return
	}
	writeJSON(w, http.StatusOK, typeJSON, aclList(d.Bindings))
}

// aclsAllowed answers 501 when ACLs are off and 403 when the principal
// may not do op on the cluster.
func (g *Gateway) aclsAllowed(w http.ResponseWriter, r *http.Request, op auth.Operation) bool {
	if g.cfg.ACLs == nil {
		writeError(w, http.StatusNotImplemented, codeSecurityOff, "ACLs are off: no authorizer is configured (authorizer.class.name)")
		return false
	}
	p := auth.PrincipalFrom(r.Context())
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	act := auth.Action{Principal: p, Host: host, Operation: op, Resource: auth.Resource{Type: auth.ResourceCluster, Name: auth.ClusterName}}
	if !g.cfg.ACLs.Authorizer().Authorize(r.Context(), act) {
		writeError(w, http.StatusForbidden, codeACLForbidden, fmt.Sprintf("%s may not %s the cluster", p, op))
		return false
	}
	return true
}

func writeACLError(w http.ResponseWriter, err error) {
	if errors.Is(err, acl.ErrInvalid) {
		writeError(w, http.StatusUnprocessableEntity, codeInvalidACL, err.Error())
		return
	}
	writeError(w, http.StatusInternalServerError, codeInternal, err.Error())
}

func aclList(bs []acl.Binding) ACLList {
	out := ACLList{ACLs: make([]ACLBinding, 0, len(bs))}
	for _, b := range bs {
		out.ACLs = append(out.ACLs, ACLBinding{
			ResourceType: b.Pattern.Type.String(), ResourceName: b.Pattern.Name,
			PatternType: acl.PatternTypeName(b.Pattern.PatternType), Principal: b.Entry.Principal.String(),
			Host: b.Entry.Host, Operation: b.Entry.Operation.String(), Permission: acl.PermissionName(b.Entry.Permission)})
	}
	return out
}

func (j ACLBinding) binding() (acl.Binding, error) {
	var b acl.Binding
	var err error
	if b.Pattern.Type, err = auth.ParseResourceType(j.ResourceType); err != nil {
		return b, invalid(err)
	}
	b.Pattern.Name = j.ResourceName
	if b.Pattern.PatternType, err = parseOr(j.PatternType, auth.PatternLiteral, acl.ParsePatternType); err != nil {
		return b, invalid(err)
	}
	if b.Entry.Principal, err = auth.ParsePrincipal(j.Principal); err != nil {
		return b, invalid(err)
	}
	b.Entry.Host = j.Host
	if b.Entry.Host == "" {
		b.Entry.Host = auth.Wildcard
	}
	if b.Entry.Operation, err = auth.ParseOperation(j.Operation); err != nil {
		return b, invalid(err)
	}
	if b.Entry.Permission, err = parseOr(j.Permission, auth.Allow, acl.ParsePermission); err != nil {
		return b, invalid(err)
	}
	return b, nil
}

func (j ACLFilter) filter() (acl.Filter, error) {
	f := acl.Filter{Name: j.ResourceName, Host: j.Host}
	var err error
	if f.Type, err = parseOr(j.ResourceType, auth.ResourceAny, auth.ParseResourceType); err != nil {
		return f, invalid(err)
	}
	if f.PatternType, err = parseOr(j.PatternType, auth.PatternAny, acl.ParsePatternType); err != nil {
		return f, invalid(err)
	}
	if j.Principal != nil {
		p, err := auth.ParsePrincipal(*j.Principal)
		if err != nil {
			return f, invalid(err)
		}
		f.Principal = &p
	}
	if f.Operation, err = parseOr(j.Operation, auth.OpAny, auth.ParseOperation); err != nil {
		return f, invalid(err)
	}
	if f.Permission, err = parseOr(j.Permission, auth.PermissionAny, acl.ParsePermission); err != nil {
		return f, invalid(err)
	}
	return f, f.Validate()
}

func filterFromQuery(q url.Values) (acl.Filter, error) {
	var j ACLFilter
	opt := func(key string) *string {
		if !q.Has(key) {
			return nil
		}
		v := q.Get(key)
		return &v
	}
	j.ResourceType, j.PatternType = q.Get("resource_type"), q.Get("pattern_type")
	j.Operation, j.Permission = q.Get("operation"), q.Get("permission")
	j.ResourceName, j.Principal, j.Host = opt("resource_name"), opt("principal"), opt("host")
	return j.filter()
}

// parseOr parses a name, def when it is empty.
func parseOr[T any](s string, def T, parse func(string) (T, error)) (T, error) {
	if strings.TrimSpace(s) == "" {
		return def, nil
	}
	return parse(s)
}

func invalid(err error) error { return fmt.Errorf("%w: %v", acl.ErrInvalid, err) }
