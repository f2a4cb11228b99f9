package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ferry-mq/ferry/server/auth"
)

// sessionRoutes mounts the admin page's login, logout and whoami. With
// authentication off, login answers 404 and whoami names User:ANONYMOUS.
func (g *Gateway) sessionRoutes(r chi.Router) {
	r.Post("/auth/login", g.login)
	r.Post("/auth/logout", g.logout)
	r.Get("/auth/whoami", g.whoami)
	r.Get("/auth/permissions", g.permissions)
}

type loginBody struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

type sessionAnswer struct {
	Principal string `json:"principal" example:"User:alice"`
	// Authenticated is false when the gateway requires no credentials.
	Authenticated bool `json:"authenticated"`
	// ExpiresAt is when the session ends (login only).
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// login serves POST /auth/login.
//
//	@Summary		Log in: a session cookie for the admin page
//	@Description	Checks the user's password (the same users as SASL and Basic) and sets the session cookie ferry_session: HttpOnly, SameSite=Strict, Secure over TLS, for ferry.http.session.ttl.ms (default 1 hour). Every node of a cluster accepts it. Changing the user's password or deleting the user ends it.
//	@Tags			auth
//	@Accept			json,x-www-form-urlencoded
//	@Produce		json
//	@Param			credentials	body		loginBody	true	"user name and password"
//	@Success		200			{object}	sessionAnswer
//	@Failure		400			{object}	errorBody	"40001: the body is not a user name and password"
//	@Failure		401			{object}	errorBody	"40101: wrong user name or password"
//	@Failure		404			{object}	errorBody	"40404: authentication is off"
//	@Router			/auth/login [post]
func (g *Gateway) login(w http.ResponseWriter, r *http.Request) {
	if g.authn == nil || g.authn.cfg.Credentials == nil {
		writeError(w, http.StatusNotFound, codeNotFound, "authentication with passwords is off on this node")
		return
	}
	var body loginBody
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if err := r.ParseForm(); err != nil {
			writeCoreError(w, err)
			return
		}
		body.Username, body.Password = r.PostForm.Get("username"), r.PostForm.Get("password")
	} else if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, codeMalformed, "want {\"username\":…,\"password\":…}")
		return
	}
	if body.Username == "" || body.Password == "" {
		writeError(w, http.StatusBadRequest, codeMalformed, "username and password are required")
		return
	}
	p, err := g.authn.basic(r.Context(), body.Username, body.Password)
	if err != nil {
		var ue errUnauthenticated
		if !errors.As(err, &ue) {
			return // the client went away
		}
		g.auditLine(r, "unauthenticated", http.StatusUnauthorized, "login of "+fmt.Sprintf("%q", body.Username)+": "+ue.msg)
		writeError(w, http.StatusUnauthorized, codeUnauthenticated, ue.msg)
		return
	}
	cred, _ := g.authn.lookupUser(body.Username)
	value, expires := g.authn.issueSession(body.Username, cred)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: value, Path: "/", Expires: expires,
		MaxAge: int(time.Until(expires).Seconds()), HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	if rec := recorderOf(w); rec != nil {
		rec.principal = p
	}
	g.auditLine(r.WithContext(auth.WithPrincipal(r.Context(), p)), "allowed", http.StatusOK, "login")
	writeJSON(w, http.StatusOK, typeJSON, sessionAnswer{Principal: p.String(), Authenticated: true, ExpiresAt: &expires})
}

// logout serves POST /auth/logout.
//
//	@Summary		Log out: clear the session cookie
//	@Description	The cookie is removed from the browser. A copy kept elsewhere stays valid until it expires, the password changes or the user is deleted.
//	@Tags			auth
//	@Success		204	"logged out"
//	@Failure		401	{object}	errorBody	"40101: not authenticated"
//	@Router			/auth/logout [post]
func (g *Gateway) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}

// whoami serves GET /auth/whoami.
//
//	@Summary	Who the request runs as
//	@Tags		auth
//	@Produce	json
//	@Success	200	{object}	sessionAnswer
//	@Failure	401	{object}	errorBody	"40101: not authenticated"
//	@Router		/auth/whoami [get]
func (g *Gateway) whoami(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, typeJSON, sessionAnswer{Principal: auth.PrincipalFrom(r.Context()).String(), Authenticated: g.authn != nil})
}

// maxPermissionChecks bounds one GET /auth/permissions.
const maxPermissionChecks = 200

// permissions serves GET /auth/permissions?check=OP:TYPE:NAME….
//
//	@Summary		What the caller may do
//	@Description	Each check is OPERATION:RESOURCE_TYPE:NAME (DELETE:TOPIC:orders, ALTER:CLUSTER:kafka-cluster, WRITE:SUBJECT:orders-value), answered true or false by the same authorizer every route asks, so the admin page can disable what would be refused. Everything is true when ACLs are off.
//	@Tags			auth
//	@Produce		json
//	@Param			check	query		[]string	true	"OPERATION:RESOURCE_TYPE:NAME, up to 200"	collectionFormat(multi)
//	@Success		200		{object}	map[string]bool
//	@Failure		400		{object}	errorBody	"40002: a check is not OPERATION:RESOURCE_TYPE:NAME, or more than 200"
//	@Failure		401		{object}	errorBody	"40101: not authenticated"
//	@Router			/auth/permissions [get]
func (g *Gateway) permissions(w http.ResponseWriter, r *http.Request) {
	checks := r.URL.Query()["check"]
	if len(checks) == 0 || len(checks) > maxPermissionChecks {
		writeError(w, http.StatusBadRequest, codeBadParam, fmt.Sprintf("check: give 1 to %d of OPERATION:RESOURCE_TYPE:NAME", maxPermissionChecks))
		return
	}
	out := make(map[string]bool, len(checks))
	for _, c := range checks {
		parts := strings.SplitN(c, ":", 3)
		if len(parts) != 3 || parts[2] == "" {
			writeError(w, http.StatusBadRequest, codeBadParam, fmt.Sprintf("check %q: want OPERATION:RESOURCE_TYPE:NAME", c))
			return
		}
		op, err1 := auth.ParseOperation(parts[0])
		typ, err2 := auth.ParseResourceType(parts[1])
		if err := errors.Join(err1, err2); err != nil {
			writeError(w, http.StatusBadRequest, codeBadParam, fmt.Sprintf("check %q: %v", c, err))
			return
		}
		out[c] = g.may(r, op, auth.Resource{Type: typ, Name: parts[2]})
	}
	writeJSON(w, http.StatusOK, typeJSON, out)
}
