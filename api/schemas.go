package api

import (
	"github.com/ferry-mq/ferry/server/auth"

	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/ferry-mq/ferry/schemaregistry"
)

// The schema registry at Confluent Schema Registry's paths, response
// shapes and error codes, so Confluent's serializers and clients work
// against ferry's HTTP port. Every rule lives in schemaregistry.Registry;
// these handlers only decode, call and encode.

const (
	typeSchemaRegistryV1 = "application/vnd.schemaregistry.v1+json"
	typeSchemaRegistry   = "application/vnd.schemaregistry+json"
)

// schemaRoutes mounts the registry's routes.
func (g *Gateway) schemaRoutes(r chi.Router) {
	sr := g.requireSchemas
	r.Get("/subjects", sr(g.listSubjects))
	r.Post("/subjects/{subject}", sr(g.lookupSchema))
	r.Delete("/subjects/{subject}", sr(g.deleteSubject))
	r.Get("/subjects/{subject}/versions", sr(g.listVersions))
	r.Post("/subjects/{subject}/versions", sr(g.registerSchema))
	r.Get("/subjects/{subject}/versions/{version}", sr(g.getVersion))
	r.Delete("/subjects/{subject}/versions/{version}", sr(g.deleteVersion))
	r.Get("/subjects/{subject}/versions/{version}/schema", sr(g.getVersionSchema))
	r.Get("/subjects/{subject}/versions/{version}/referencedby", sr(g.referencedBy))
	r.Get("/subjects/{subject}/diff", sr(g.diffVersions))
	r.Post("/subjects/{subject}/diff", sr(g.diffVersions))

	r.Get("/schemas", sr(g.listSchemas))
	r.Get("/schemas/types", sr(g.schemaTypes))
	r.Get("/schemas/ids/{id}", sr(g.schemaByID))
	r.Get("/schemas/ids/{id}/schema", sr(g.rawSchemaByID))
	r.Get("/schemas/ids/{id}/versions", sr(g.versionsByID))
	r.Get("/schemas/ids/{id}/subjects", sr(g.subjectsByID))

	r.Get("/config", sr(g.getConfig))
	r.Put("/config", sr(g.putConfig))
	r.Delete("/config", sr(g.deleteConfig))
	r.Get("/config/{subject}", sr(g.getConfig))
	r.Put("/config/{subject}", sr(g.putConfig))
	r.Delete("/config/{subject}", sr(g.deleteConfig))

	r.Post("/compatibility/subjects/{subject}/versions", sr(g.checkCompatibility))
	r.Post("/compatibility/subjects/{subject}/versions/{version}", sr(g.checkCompatibility))

	r.Get("/mode", sr(g.getMode))
	r.Put("/mode", sr(g.putMode))
	r.Get("/mode/{subject}", sr(g.getMode))
	r.Put("/mode/{subject}", sr(g.putMode))
	r.Delete("/mode/{subject}", sr(g.deleteMode))
}

// requireSchemas answers 503 when no registry is configured and 415 for a
// body type Confluent's clients do not send.
func (g *Gateway) requireSchemas(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if g.cfg.Schemas == nil {
			writeSchemaError(w, r, http.StatusServiceUnavailable, codeUnavailable, "the schema registry is not configured on this node")
			return
		}
		if r.Method == http.MethodPost || r.Method == http.MethodPut {
			if ct := r.Header.Get("Content-Type"); !schemaBodyType(ct) {
				writeSchemaError(w, r, http.StatusUnsupportedMediaType, codeUnsupportedType,
					"content type "+ct+" is not supported; use "+typeSchemaRegistryV1+", "+typeSchemaRegistry+" or application/json")
				return
			}
		}
		h(w, r)
	}
}

func schemaBodyType(ct string) bool {
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	switch mt {
	case typeSchemaRegistryV1, typeSchemaRegistry, "application/json", "application/octet-stream":
		return true
	}
	return false
}

// responseType picks the answer's content type from Accept, defaulting to
// Confluent's v1 type.
func responseType(r *http.Request) string {
	accept := r.Header.Get("Accept")
	switch {
	case accept == "", strings.Contains(accept, typeSchemaRegistryV1), strings.Contains(accept, "*/*"):
		return typeSchemaRegistryV1
	case strings.Contains(accept, typeSchemaRegistry):
		return typeSchemaRegistry
	case strings.Contains(accept, "application/json"):
		return "application/json"
	}
	return typeSchemaRegistryV1
}

func writeSchemaJSON(w http.ResponseWriter, r *http.Request, v any) {
	writeJSON(w, http.StatusOK, responseType(r), v)
}

func writeSchemaError(w http.ResponseWriter, r *http.Request, status, code int, msg string) {
	writeJSON(w, status, responseType(r), errorBody{ErrorCode: code, Message: msg})
}

// writeRegistryError maps a registry error to its status and error_code.
func writeRegistryError(w http.ResponseWriter, r *http.Request, err error) {
	var e *schemaregistry.Error
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &e):
		writeSchemaError(w, r, e.Status(), e.Code, e.Message)
	case errors.As(err, &tooBig):
		writeSchemaError(w, r, http.StatusRequestEntityTooLarge, codeTooLarge, err.Error())
	default:
		writeSchemaError(w, r, http.StatusInternalServerError, codeInternal, err.Error())
	}
}

// subjectParam is the {subject} path parameter, unescaped (subjects may
// hold %2F).
func subjectParam(r *http.Request) string {
	return pathParam(r, "subject")
}

func flag(r *http.Request, name string) bool {
	b, _ := strconv.ParseBool(r.URL.Query().Get(name))
	return b
}

func versionParam(r *http.Request) (int, error) {
	v := pathParam(r, "version")
	if v == "" {
		return schemaregistry.Latest, nil
	}
	return schemaregistry.ParseVersion(v)
}

func idParam(r *http.Request) (int, error) {
	s := pathParam(r, "id")
	id, err := strconv.Atoi(s)
	if err != nil || id < 1 {
		return 0, &schemaregistry.Error{Code: 40403, Message: "Schema " + s + " not found"}
	}
	return id, nil
}

// decodeSchemaBody reads a JSON body: 400 when it is not JSON, 422 when
// it has the wrong shape, as Confluent answers.
func decodeSchemaBody(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return &schemaregistry.Error{Code: 422, Message: "Unprocessable entity: " + err.Error()}
		}
		return &schemaregistry.Error{Code: 400, Message: "Malformed JSON body: " + err.Error()}
	}
	return nil
}

// listSubjects serves GET /subjects (?deleted=true, ?subjectPrefix=).
func (g *Gateway) listSubjects(w http.ResponseWriter, r *http.Request) {
	subjects, err := g.cfg.Schemas.Subjects(r.Context(), flag(r, "deleted"))
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	if prefix := r.URL.Query().Get("subjectPrefix"); prefix != "" {
		kept := subjects[:0]
		for _, s := range subjects {
			if strings.HasPrefix(s, prefix) {
				kept = append(kept, s)
			}
		}
		subjects = kept
	}
	writeSchemaJSON(w, r, g.describable(r, auth.ResourceSubject, subjects))
}

// listVersions serves GET /subjects/{subject}/versions (?deleted=true).
func (g *Gateway) listVersions(w http.ResponseWriter, r *http.Request) {
	vs, err := g.cfg.Schemas.Versions(r.Context(), subjectParam(r), flag(r, "deleted"))
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, vs)
}

// registerSchema serves POST /subjects/{subject}/versions → {"id": n}.
func (g *Gateway) registerSchema(w http.ResponseWriter, r *http.Request) {
	var req schemaregistry.SchemaRequest
	if err := decodeSchemaBody(r, &req); err != nil {
		writeRegistryError(w, r, err)
		return
	}
	req.Normalize = flag(r, "normalize")
	id, err := g.cfg.Schemas.Register(r.Context(), subjectParam(r), req)
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, schemaIDAnswer{ID: id})
}

// lookupSchema serves POST /subjects/{subject}: which version holds this schema.
func (g *Gateway) lookupSchema(w http.ResponseWriter, r *http.Request) {
	var req schemaregistry.SchemaRequest
	if err := decodeSchemaBody(r, &req); err != nil {
		writeRegistryError(w, r, err)
		return
	}
	req.Normalize = flag(r, "normalize")
	info, err := g.cfg.Schemas.Lookup(r.Context(), subjectParam(r), req, flag(r, "deleted"))
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, info)
}

// getVersion serves GET /subjects/{subject}/versions/{version} (?deleted=true).
func (g *Gateway) getVersion(w http.ResponseWriter, r *http.Request) {
	info, ok := g.version(w, r)
	if ok {
		writeSchemaJSON(w, r, info)
	}
}

// getVersionSchema serves GET /subjects/{subject}/versions/{version}/schema:
// the schema itself.
func (g *Gateway) getVersionSchema(w http.ResponseWriter, r *http.Request) {
	info, ok := g.version(w, r)
	if ok {
		w.Header().Set("Content-Type", responseType(r))
		io.WriteString(w, info.Schema)
	}
}

func (g *Gateway) version(w http.ResponseWriter, r *http.Request) (schemaregistry.SchemaInfo, bool) {
	v, err := versionParam(r)
	if err != nil {
		writeRegistryError(w, r, err)
		return schemaregistry.SchemaInfo{}, false
	}
	info, err := g.cfg.Schemas.GetVersion(r.Context(), subjectParam(r), v, flag(r, "deleted"))
	if err != nil {
		writeRegistryError(w, r, err)
		return info, false
	}
	return info, true
}

// referencedBy serves GET /subjects/{subject}/versions/{version}/referencedby.
func (g *Gateway) referencedBy(w http.ResponseWriter, r *http.Request) {
	v, err := versionParam(r)
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	ids, err := g.cfg.Schemas.ReferencedBy(r.Context(), subjectParam(r), v)
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, ids)
}

// deleteVersion serves DELETE /subjects/{subject}/versions/{version}
// (?permanent=true) → the version number.
func (g *Gateway) deleteVersion(w http.ResponseWriter, r *http.Request) {
	v, err := versionParam(r)
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	n, err := g.cfg.Schemas.DeleteVersion(r.Context(), subjectParam(r), v, flag(r, "permanent"))
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, n)
}

// deleteSubject serves DELETE /subjects/{subject} (?permanent=true) → the
// versions deleted.
func (g *Gateway) deleteSubject(w http.ResponseWriter, r *http.Request) {
	vs, err := g.cfg.Schemas.DeleteSubject(r.Context(), subjectParam(r), flag(r, "permanent"))
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, vs)
}

// schemaTypes serves GET /schemas/types: the types this node really
// serves.
func (g *Gateway) schemaTypes(w http.ResponseWriter, r *http.Request) {
	writeSchemaJSON(w, r, schemaregistry.SchemaTypes())
}

// listSchemas serves GET /schemas (?subjectPrefix=, ?deleted=true,
// ?latestOnly=true, ?offset=, ?limit=): registered versions with their
// schemas, as Confluent's.
func (g *Gateway) listSchemas(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	offset, err1 := nonNegative(q.Get("offset"))
	limit, err2 := nonNegative(q.Get("limit"))
	if err1 != nil || err2 != nil {
		writeSchemaError(w, r, http.StatusBadRequest, 400, "offset and limit are non-negative integers")
		return
	}
	list, err := g.cfg.Schemas.ListSchemas(r.Context(), schemaregistry.ListSchemasOptions{
		SubjectPrefix: q.Get("subjectPrefix"), Deleted: flag(r, "deleted"), LatestOnly: flag(r, "latestOnly")})
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	list = list[min(offset, len(list)):]
	if limit > 0 && limit < len(list) {
		list = list[:limit]
	}
	writeSchemaJSON(w, r, g.readableSchemas(r, list))
}

func nonNegative(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, errors.New("not a non-negative integer")
	}
	return n, nil
}

// readableSchemas keeps the entries whose subject the caller may read:
// they carry the schemas themselves.
func (g *Gateway) readableSchemas(r *http.Request, list []schemaregistry.SchemaInfo) []schemaregistry.SchemaInfo {
	if g.cfg.Authorizer == nil {
		return list
	}
	out := []schemaregistry.SchemaInfo{}
	for _, info := range list {
		if g.may(r, auth.OpRead, auth.Resource{Type: auth.ResourceSubject, Name: info.Subject}) {
			out = append(out, info)
		}
	}
	return out
}

type schemaByIDAnswer struct {
	SchemaType string                     `json:"schemaType,omitempty"`
	Schema     string                     `json:"schema"`
	References []schemaregistry.Reference `json:"references,omitempty"`
}

// schemaByID serves GET /schemas/ids/{id} (?subject= is accepted and,
// with a single schema context, does not narrow the lookup).
func (g *Gateway) schemaByID(w http.ResponseWriter, r *http.Request) {
	st, ok := g.storedSchema(w, r)
	if ok {
		writeSchemaJSON(w, r, schemaByIDAnswer{SchemaType: schemaregistry.AnswerType(st.Type), Schema: st.Text, References: st.References})
	}
}

// rawSchemaByID serves GET /schemas/ids/{id}/schema.
func (g *Gateway) rawSchemaByID(w http.ResponseWriter, r *http.Request) {
	st, ok := g.storedSchema(w, r)
	if ok {
		w.Header().Set("Content-Type", responseType(r))
		io.WriteString(w, st.Text)
	}
}

func (g *Gateway) storedSchema(w http.ResponseWriter, r *http.Request) (schemaregistry.StoredSchema, bool) {
	id, err := idParam(r)
	if err == nil {
		var st schemaregistry.StoredSchema
		if st, err = g.cfg.Schemas.SchemaByID(r.Context(), id); err == nil {
			return st, true
		}
	}
	writeRegistryError(w, r, err)
	return schemaregistry.StoredSchema{}, false
}

// versionsByID serves GET /schemas/ids/{id}/versions (?deleted=true).
func (g *Gateway) versionsByID(w http.ResponseWriter, r *http.Request) {
	id, err := idParam(r)
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	vs, err := g.cfg.Schemas.VersionsByID(r.Context(), id, flag(r, "deleted"))
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	out := make([]subjectVersion, len(vs))
	for i, v := range vs {
		out[i] = subjectVersion{Subject: v.Subject, Version: v.Version}
	}
	writeSchemaJSON(w, r, out)
}

type subjectVersion struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// subjectsByID serves GET /schemas/ids/{id}/subjects (?deleted=true).
func (g *Gateway) subjectsByID(w http.ResponseWriter, r *http.Request) {
	id, err := idParam(r)
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	subjects, err := g.cfg.Schemas.SubjectsByID(r.Context(), id, flag(r, "deleted"))
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, subjects)
}

// checkCompatibility serves POST /compatibility/subjects/{subject}/versions[/{version}]
// (?verbose=true) → {"is_compatible": bool[, "messages": [...]]}.
func (g *Gateway) checkCompatibility(w http.ResponseWriter, r *http.Request) {
	v, err := versionParam(r)
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	var req schemaregistry.SchemaRequest
	if err := decodeSchemaBody(r, &req); err != nil {
		writeRegistryError(w, r, err)
		return
	}
	req.Normalize = flag(r, "normalize")
	var msgs []string
	if chi.URLParam(r, "version") == "" { // what registration would check
		msgs, err = g.cfg.Schemas.CheckCompatibilityAll(r.Context(), subjectParam(r), req)
	} else { // that one version, whatever the level's transitivity
		msgs, err = g.cfg.Schemas.CheckCompatibility(r.Context(), subjectParam(r), v, req)
	}
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	answer := map[string]any{"is_compatible": len(msgs) == 0}
	if flag(r, "verbose") {
		if msgs == nil {
			msgs = []string{}
		}
		answer["messages"] = msgs
	}
	writeSchemaJSON(w, r, answer)
}

// getConfig serves GET /config and /config/{subject} (?defaultToGlobal=true).
func (g *Gateway) getConfig(w http.ResponseWriter, r *http.Request) {
	level, err := g.cfg.Schemas.Compatibility(r.Context(), subjectParam(r), flag(r, "defaultToGlobal"))
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, compatibilityLevelAnswer{CompatibilityLevel: level})
}

// putConfig serves PUT /config and /config/{subject} {"compatibility": "..."}.
func (g *Gateway) putConfig(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Compatibility string `json:"compatibility"`
	}
	if err := decodeSchemaBody(r, &req); err != nil {
		writeRegistryError(w, r, err)
		return
	}
	level, err := g.cfg.Schemas.SetCompatibility(r.Context(), subjectParam(r), req.Compatibility)
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, compatibilityUpdate{Compatibility: level})
}

// deleteConfig serves DELETE /config and /config/{subject} → the level it had.
func (g *Gateway) deleteConfig(w http.ResponseWriter, r *http.Request) {
	level, err := g.cfg.Schemas.DeleteCompatibility(r.Context(), subjectParam(r))
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, compatibilityLevelAnswer{CompatibilityLevel: level})
}

// getMode serves GET /mode and /mode/{subject} (?defaultToGlobal=true).
func (g *Gateway) getMode(w http.ResponseWriter, r *http.Request) {
	mode, err := g.cfg.Schemas.Mode(r.Context(), subjectParam(r), flag(r, "defaultToGlobal"))
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, modeBody{Mode: mode})
}

// putMode serves PUT /mode and /mode/{subject} {"mode": "..."} (?force=true).
func (g *Gateway) putMode(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Mode string `json:"mode"`
	}
	if err := decodeSchemaBody(r, &req); err != nil {
		writeRegistryError(w, r, err)
		return
	}
	mode, err := g.cfg.Schemas.SetMode(r.Context(), subjectParam(r), req.Mode, flag(r, "force"))
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, modeBody{Mode: mode})
}

// deleteMode serves DELETE /mode/{subject} → the mode it had.
func (g *Gateway) deleteMode(w http.ResponseWriter, r *http.Request) {
	mode, err := g.cfg.Schemas.DeleteMode(r.Context(), subjectParam(r))
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, modeBody{Mode: mode})
}

// diffVersions serves GET /subjects/{subject}/diff?from=V1&to=V2 (to
// defaults to latest) and POST /subjects/{subject}/diff?from=V with a
// candidate schema in the body (from defaults to latest): the semantic
// changes, each with its verdict under every compatibility level.
func (g *Gateway) diffVersions(w http.ResponseWriter, r *http.Request) {
	from, err := queryVersion(r, "from")
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	to, err := queryVersion(r, "to")
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	var candidate *schemaregistry.SchemaRequest
	if r.Method == http.MethodPost {
		candidate = new(schemaregistry.SchemaRequest)
		if err := decodeSchemaBody(r, candidate); err != nil {
			writeRegistryError(w, r, err)
			return
		}
	} else if r.URL.Query().Get("from") == "" {
		writeRegistryError(w, r, &schemaregistry.Error{Code: 42202, Message: "from=<version> is required to compare two versions"})
		return
	}
	res, err := g.cfg.Schemas.Diff(r.Context(), subjectParam(r), from, to, candidate)
	if err != nil {
		writeRegistryError(w, r, err)
		return
	}
	writeSchemaJSON(w, r, res)
}

func queryVersion(r *http.Request, name string) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return schemaregistry.Latest, nil
	}
	return schemaregistry.ParseVersion(v)
}
