package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ferry-mq/ferry/server/auth"
)

// tokenRoutes mounts /admin/tokens: API tokens are made, listed and
// revoked here (and offline with `ferry tokens --data-dir|--zookeeper`).
func (g *Gateway) tokenRoutes(r chi.Router) {
	r.Post("/admin/tokens", g.createToken)
	r.Get("/admin/tokens", g.listTokens)
	r.Delete("/admin/tokens/{id}", g.revokeToken)
}

type createTokenBody struct {
	Name string `json:"name" example:"ci-deploy"`
	// User the token acts as; default the caller.
	User string `json:"user" example:"deployer"`
	// ExpiresInMs is the token's lifetime; absent or 0: it never expires.
	ExpiresInMs int64 `json:"expires_in_ms" example:"2592000000"`
}

// tokenInfo is a token as listed: never its secret or hash.
type tokenInfo struct {
	ID        string     `json:"id" example:"3f9a0c12b7e4"`
	Name      string     `json:"name"`
	User      string     `json:"user"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

type createdToken struct {
	tokenInfo
	// Token is shown once: only its hash is kept.
	Token string `json:"token" example:"ferry_3f9a0c12b7e4_…"`
}

func infoOf(t auth.APIToken) tokenInfo {
	i := tokenInfo{ID: t.ID, Name: t.Name, User: t.User, CreatedAt: t.CreatedAt}
	if !t.ExpiresAt.IsZero() {
		e := t.ExpiresAt
		i.ExpiresAt = &e
	}
	return i
}

// mayManageTokensOf: a principal makes and revokes its own tokens; those
// of other users need ALTER on the cluster (a token acts as its user).
func (g *Gateway) mayManageTokensOf(r *http.Request, user string) bool {
	p := auth.PrincipalFrom(r.Context())
	if p == auth.User(user) && p != auth.Anonymous {
		return true
	}
	return g.may(r, auth.OpAlter, auth.Resource{Type: auth.ResourceCluster, Name: auth.ClusterName})
}

// tokensOff answers 503 when the node keeps no API tokens.
func (g *Gateway) tokensOff(w http.ResponseWriter) bool {
	if g.cfg.Tokens == nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "API tokens need HTTP authentication (--security or --http-auth)")
		return true
	}
	return false
}

// createToken serves POST /admin/tokens.
//
//	@Summary		Create an API token
//	@Description	A bearer token for the HTTP gateway (Authorization: Bearer ferry_…), acting as its user. The answer is the only time the token is shown: ferry keeps its SHA-256. A principal may create tokens for itself; for another user it needs ALTER on the cluster.
//	@Tags			auth
//	@Accept			json
//	@Produce		json
//	@Param			token	body		createTokenBody	true	"name, user, lifetime"
//	@Success		201		{object}	createdToken
//	@Failure		400		{object}	errorBody	"40001: bad name, user or lifetime"
//	@Failure		403		{object}	errorBody	"40304: not allowed to create tokens for that user"
//	@Failure		503		{object}	errorBody	"50301: API tokens are off"
//	@Router			/admin/tokens [post]
func (g *Gateway) createToken(w http.ResponseWriter, r *http.Request) {
	if g.tokensOff(w) {
		return
	}
	var body createTokenBody
	if !decodeBody(w, r, &body) {
		return
	}
	if body.User == "" {
		body.User = auth.PrincipalFrom(r.Context()).Name
	}
	if !g.mayManageTokensOf(r, body.User) {
		g.deny(w, r, fmt.Sprintf("%s may not create tokens for User:%s", auth.PrincipalFrom(r.Context()), body.User))
		return
	}
	token, stored, err := auth.NewAPIToken(body.Name, body.User, time.Duration(body.ExpiresInMs)*time.Millisecond, time.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, codeMalformed, err.Error())
		return
	}
	if err := g.cfg.Tokens.Add(stored); err != nil {
		writeError(w, http.StatusInternalServerError, codeInternal, "storing the token: "+err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, typeJSON, createdToken{tokenInfo: infoOf(stored), Token: token})
}

// listTokens serves GET /admin/tokens.
//
//	@Summary		List API tokens
//	@Description	Ids, names, users and lifetimes, never secrets. A principal sees its own tokens; with DESCRIBE on the cluster, everyone's.
//	@Tags			auth
//	@Produce		json
//	@Success		200	{array}		tokenInfo
//	@Failure		503	{object}	errorBody	"50301: API tokens are off"
//	@Router			/admin/tokens [get]
func (g *Gateway) listTokens(w http.ResponseWriter, r *http.Request) {
	if g.tokensOff(w) {
		return
	}
	all := g.may(r, auth.OpDescribe, auth.Resource{Type: auth.ResourceCluster, Name: auth.ClusterName})
	p := auth.PrincipalFrom(r.Context())
	out := []tokenInfo{}
	for _, t := range g.cfg.Tokens.List() {
		if all || auth.User(t.User) == p {
			out = append(out, infoOf(t))
		}
	}
	writeJSON(w, http.StatusOK, typeJSON, out)
}

// revokeToken serves DELETE /admin/tokens/{id}.
//
//	@Summary	Revoke an API token
//	@Tags		auth
//	@Param		id	path	string	true	"token id"
//	@Success	204	"revoked: every node refuses it from now on"
//	@Failure	403	{object}	errorBody	"40304: not allowed to revoke that user's tokens"
//	@Failure	404	{object}	errorBody	"40404: no such token"
//	@Failure	503	{object}	errorBody	"50301: API tokens are off"
//	@Router		/admin/tokens/{id} [delete]
func (g *Gateway) revokeToken(w http.ResponseWriter, r *http.Request) {
	if g.tokensOff(w) {
		return
	}
	id := pathParam(r, "id")
	t, ok := g.cfg.Tokens.LookupAPIToken(id)
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, "no API token "+id)
		return
	}
	if !g.mayManageTokensOf(r, t.User) {
		g.deny(w, r, fmt.Sprintf("%s may not revoke tokens of User:%s", auth.PrincipalFrom(r.Context()), t.User))
		return
	}
	found, err := g.cfg.Tokens.Revoke(id)
	switch {
	case err != nil:
		writeError(w, http.StatusInternalServerError, codeInternal, "revoking the token: "+err.Error())
	case !found:
		writeError(w, http.StatusNotFound, codeNotFound, "no API token "+id)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}
