package api

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/ferry-mq/ferry/server/auth"
)

// HTTP authorization (issue 14): every route asks the one authorizer the
// Kafka listener asks, for the operations Kafka's own APIs need for the
// same thing (produce is WRITE on the topic, reading READ, a REST
// consumer READ on its group, creating a topic CREATE, …), so an ACL
// means the same whichever surface a client uses. The table below names
// them per route; a route missing from it is refused (and a test walks
// the router to make sure none is). Lists (topics, groups, subjects) are
// not refused: they leave out what the principal may not DESCRIBE.

// requirement is one action a route needs, its resource named from the
// request (a path parameter, usually).
type requirement struct {
	op   auth.Operation
	typ  auth.ResourceType
	name func(*http.Request) string
}

func param(key string) func(*http.Request) string {
	return func(r *http.Request) string { return chi.URLParam(r, key) }
}

func fixed(name string) func(*http.Request) string { return func(*http.Request) string { return name } }

var (
	theCluster = fixed(auth.ClusterName)
	byTopic    = param("topic")
	byGroup    = param("group")
	bySubject  = param("subject")
)

func need(op auth.Operation, typ auth.ResourceType, name func(*http.Request) string) requirement {
	return requirement{op, typ, name}
}

// routeRequirements maps "METHOD pattern" to what the route needs. An
// empty list: any authenticated principal (lists filter their items;
// documentation and schema types hold nothing of anyone's).
var routeRequirements = map[string][]requirement{
	"GET /healthz":     nil,
	"GET /readyz":      nil,
	"GET /metrics":     {need(auth.OpDescribe, auth.ResourceCluster, theCluster)},
	"POST /auth/login": nil, "POST /auth/logout": nil, "GET /auth/whoami": nil, "GET /auth/permissions": nil,
	"GET /brokers": {need(auth.OpDescribe, auth.ResourceCluster, theCluster)},
	"GET /cluster": {need(auth.OpDescribe, auth.ResourceCluster, theCluster)},

	"POST /kafka":         nil, // WRITE on each record's topic: produceTransaction
	"POST /kafka/{topic}": {need(auth.OpWrite, auth.ResourceTopic, byTopic)},
	"GET /kafka/{topic}/partitions/{partition}/records": {need(auth.OpRead, auth.ResourceTopic, byTopic)},
	"GET /kafka/{topic}/partitions/{partition}/offsets": {need(auth.OpDescribe, auth.ResourceTopic, byTopic)},
	"GET /kafka/{topic}/search":                         {need(auth.OpRead, auth.ResourceTopic, byTopic)},
	"GET /kafka/{topic}/export":                         {need(auth.OpRead, auth.ResourceTopic, byTopic)},
	// And WRITE on the target, named in the body: republishRecords.
	"POST /kafka/{topic}/republish": {need(auth.OpRead, auth.ResourceTopic, byTopic)},
	"GET /kafka/{topic}/stream": {need(auth.OpRead, auth.ResourceTopic, byTopic),
		need(auth.OpRead, auth.ResourceGroup, func(r *http.Request) string { return streamGroup(r) })},

	"GET /topics":                     nil, // filtered by DESCRIBE
	"POST /topics":                    nil, // CREATE on the cluster or the topic: createTopic
	"GET /topics/{topic}":             {need(auth.OpDescribe, auth.ResourceTopic, byTopic)},
	"POST /topics/{topic}":            {need(auth.OpWrite, auth.ResourceTopic, byTopic)},
	"DELETE /topics/{topic}":          {need(auth.OpDelete, auth.ResourceTopic, byTopic)},
	"POST /topics/{topic}/partitions": {need(auth.OpAlter, auth.ResourceTopic, byTopic)},
	"PUT /topics/{topic}/configs":     {need(auth.OpAlterConfigs, auth.ResourceTopic, byTopic)},

	"POST /admin/partitions/{topic}/{partition}/recover": {need(auth.OpAlter, auth.ResourceCluster, theCluster)},
	"POST /admin/preferred-leader-election":              {need(auth.OpAlter, auth.ResourceCluster, theCluster)},
	"POST /admin/reassignments":                          {need(auth.OpAlter, auth.ResourceCluster, theCluster)},
	"GET /admin/reassignments":                           {need(auth.OpDescribe, auth.ResourceCluster, theCluster)},
	"DELETE /admin/reassignments":                        {need(auth.OpAlter, auth.ResourceCluster, theCluster)},
	"DELETE /admin/reassignments/throttle":               {need(auth.OpAlterConfigs, auth.ResourceCluster, theCluster)},
	"GET /admin/transactions":                            {need(auth.OpDescribe, auth.ResourceCluster, theCluster)},
	"POST /admin/transactions/abort":                     {need(auth.OpAlter, auth.ResourceCluster, theCluster)},
	// ACLs: the handlers check DESCRIBE or ALTER on the cluster (acls.go).
	"GET /admin/acls":    {need(auth.OpDescribe, auth.ResourceCluster, theCluster)},
	"POST /admin/acls":   {need(auth.OpAlter, auth.ResourceCluster, theCluster)},
	"DELETE /admin/acls": {need(auth.OpAlter, auth.ResourceCluster, theCluster)},
	// Tokens: one's own, or others' with ALTER/DESCRIBE on the cluster (tokens.go).
	"POST /admin/tokens": nil, "GET /admin/tokens": nil, "DELETE /admin/tokens/{id}": nil,

	"GET /groups":                                                 nil, // filtered by DESCRIBE
	"GET /groups/{group}":                                         {need(auth.OpDescribe, auth.ResourceGroup, byGroup)},
	"GET /groups/{group}/lag/history":                             {need(auth.OpDescribe, auth.ResourceGroup, byGroup)},
	"POST /groups/{group}/offsets/reset":                          {need(auth.OpRead, auth.ResourceGroup, byGroup)},
	"POST /consumers/{group}":                                     {need(auth.OpRead, auth.ResourceGroup, byGroup)},
	"DELETE /consumers/{group}/instances/{instance}":              {need(auth.OpRead, auth.ResourceGroup, byGroup)},
	"POST /consumers/{group}/instances/{instance}/subscription":   {need(auth.OpRead, auth.ResourceGroup, byGroup)},
	"GET /consumers/{group}/instances/{instance}/subscription":    {need(auth.OpRead, auth.ResourceGroup, byGroup)},
	"DELETE /consumers/{group}/instances/{instance}/subscription": {need(auth.OpRead, auth.ResourceGroup, byGroup)},
	"GET /consumers/{group}/instances/{instance}/assignments":     {need(auth.OpRead, auth.ResourceGroup, byGroup)},
	"GET /consumers/{group}/instances/{instance}/records":         {need(auth.OpRead, auth.ResourceGroup, byGroup)},
	"POST /consumers/{group}/instances/{instance}/offsets":        {need(auth.OpRead, auth.ResourceGroup, byGroup)},
	"GET /consumers/{group}/instances/{instance}/offsets":         {need(auth.OpRead, auth.ResourceGroup, byGroup)},

	"GET /subjects":                                           nil, // filtered by DESCRIBE
	"POST /subjects/{subject}":                                {need(auth.OpRead, auth.ResourceSubject, bySubject)},
	"DELETE /subjects/{subject}":                              {need(auth.OpDelete, auth.ResourceSubject, bySubject)},
	"GET /subjects/{subject}/versions":                        {need(auth.OpRead, auth.ResourceSubject, bySubject)},
	"POST /subjects/{subject}/versions":                       {need(auth.OpWrite, auth.ResourceSubject, bySubject)},
	"GET /subjects/{subject}/versions/{version}":              {need(auth.OpRead, auth.ResourceSubject, bySubject)},
	"DELETE /subjects/{subject}/versions/{version}":           {need(auth.OpDelete, auth.ResourceSubject, bySubject)},
	"GET /subjects/{subject}/versions/{version}/schema":       {need(auth.OpRead, auth.ResourceSubject, bySubject)},
	"GET /subjects/{subject}/versions/{version}/referencedby": {need(auth.OpRead, auth.ResourceSubject, bySubject)},
	"GET /subjects/{subject}/diff":                            {need(auth.OpRead, auth.ResourceSubject, bySubject)},
	"POST /subjects/{subject}/diff":                           {need(auth.OpRead, auth.ResourceSubject, bySubject)},
	"GET /schemas/types":                                      nil,
	"GET /schemas":                                            nil, // filtered by READ on each subject
	// Lookups by id: see schemaIDAllowed.
	"GET /schemas/ids/{id}":                                     nil,
	"GET /schemas/ids/{id}/schema":                              nil,
	"GET /schemas/ids/{id}/versions":                            nil,
	"GET /schemas/ids/{id}/subjects":                            nil,
	"GET /config":                                               {need(auth.OpDescribeConfigs, auth.ResourceCluster, theCluster)},
	"PUT /config":                                               {need(auth.OpAlterConfigs, auth.ResourceCluster, theCluster)},
	"DELETE /config":                                            {need(auth.OpAlterConfigs, auth.ResourceCluster, theCluster)},
	"GET /config/{subject}":                                     {need(auth.OpDescribeConfigs, auth.ResourceSubject, bySubject)},
	"PUT /config/{subject}":                                     {need(auth.OpAlter, auth.ResourceSubject, bySubject)},
	"DELETE /config/{subject}":                                  {need(auth.OpAlter, auth.ResourceSubject, bySubject)},
	"POST /compatibility/subjects/{subject}/versions":           {need(auth.OpRead, auth.ResourceSubject, bySubject)},
	"POST /compatibility/subjects/{subject}/versions/{version}": {need(auth.OpRead, auth.ResourceSubject, bySubject)},
	"GET /mode":                                                 {need(auth.OpDescribeConfigs, auth.ResourceCluster, theCluster)},
	"PUT /mode":                                                 {need(auth.OpAlterConfigs, auth.ResourceCluster, theCluster)},
	"GET /mode/{subject}":                                       {need(auth.OpDescribeConfigs, auth.ResourceSubject, bySubject)},
	"PUT /mode/{subject}":                                       {need(auth.OpAlter, auth.ResourceSubject, bySubject)},
	"DELETE /mode/{subject}":                                    {need(auth.OpAlter, auth.ResourceSubject, bySubject)},

	"GET /openapi.json": nil, "GET /openapi.yaml": nil, "GET /docs": nil, "GET /docs/*": nil,
	"GET /ui/*": nil, "GET /ui": nil,
}

// routed is each route's middleware, once chi has matched the route: it
// builds the route's pattern once (for the request metrics and log too),
// checks the route's requirements, answering 403 naming the first refused,
// and audits administrative requests (audit.go).
func (g *Gateway) routed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pattern := chi.RouteContext(r.Context()).RoutePattern()
		if rec := recorderOf(w); rec != nil {
			rec.route = pattern
		}
		if g.cfg.Authorizer != nil && !g.authorize(w, r, pattern) {
			return
		}
		g.audited(w, r, pattern, next)
	})
}

// authorize checks the requirements of r's route; false when it answered 403.
func (g *Gateway) authorize(w http.ResponseWriter, r *http.Request, pattern string) bool {
	reqs, known := routeRequirements[r.Method+" "+pattern]
	if !known && r.Method == http.MethodHead {
		reqs, known = routeRequirements[http.MethodGet+" "+pattern]
	}
	if !known {
		g.deny(w, r, fmt.Sprintf("%s %s has no permission rule", r.Method, pattern))
		return false
	}
	for _, req := range reqs {
		res := auth.Resource{Type: req.typ, Name: req.name(r)}
		if res.Name == "" {
			continue // an optional resource not named (a stream without a group)
		}
		if !g.may(r, req.op, res) {
			g.deny(w, r, fmt.Sprintf("%s may not %s %s", auth.PrincipalFrom(r.Context()), req.op, res))
			return false
		}
	}
	if strings.HasPrefix(pattern, "/schemas/ids/") && !g.schemaIDAllowed(r) {
		g.deny(w, r, fmt.Sprintf("%s may not DESCRIBE any subject of schema %s", auth.PrincipalFrom(r.Context()), chi.URLParam(r, "id")))
		return false
	}
	return true
}

// may asks the authorizer whether r's principal may do op on res.
func (g *Gateway) may(r *http.Request, op auth.Operation, res auth.Resource) bool {
	if g.cfg.Authorizer == nil {
		return true
	}
	return g.cfg.Authorizer.Authorize(r.Context(), auth.Action{Principal: auth.PrincipalFrom(r.Context()),
		Host: clientHost(r), Operation: op, Resource: res})
}

// describable is names without those r's principal may not DESCRIBE.
func (g *Gateway) describable(r *http.Request, typ auth.ResourceType, names []string) []string {
	if g.cfg.Authorizer == nil {
		return names
	}
	kept := make([]string, 0, len(names))
	for _, n := range names {
		if g.may(r, auth.OpDescribe, auth.Resource{Type: typ, Name: n}) {
			kept = append(kept, n)
		}
	}
	return kept
}

// clientHost is the client's IP address as ACLs name hosts.
func clientHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// schemaIDAllowed: a lookup by id (the hot path of every deserializer)
// is allowed when the principal may DESCRIBE a subject the schema is
// registered under. An unknown id is allowed through, for the handler's
// 404: it tells nothing about anyone's schemas.
func (g *Gateway) schemaIDAllowed(r *http.Request) bool {
	if g.cfg.Schemas == nil {
		return true
	}
	id, err := strconv.Atoi(chi.URLParam(r, "id"))
	if err != nil {
		return true // the handler answers 422
	}
	subjects, err := g.cfg.Schemas.SubjectsByID(r.Context(), id, true)
	if err != nil || len(subjects) == 0 {
		return true
	}
	for _, s := range subjects {
		if g.may(r, auth.OpDescribe, auth.Resource{Type: auth.ResourceSubject, Name: s}) {
			return true
		}
	}
	return false
}

// deny answers 403. The message names the operation and resource refused,
// never the ACLs.
func (g *Gateway) deny(w http.ResponseWriter, r *http.Request, msg string) {
	g.auditLine(r, "denied", http.StatusForbidden, msg)
	writeError(w, http.StatusForbidden, codeDenied, msg)
}
