package openapi

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	swaggerfiles "github.com/swaggo/files/v2"
)

// The generated description (see doc.go) and the two Swagger UI files
// that differ from the stock dist: an index with absolute asset paths, so
// it works at /docs without a trailing slash, and an initializer that
// loads /openapi.json.
//
//go:embed openapi3.json openapi3.yaml swagger.json swagger.yaml
var specs embed.FS

//go:embed ui/index.html ui/swagger-initializer.js
var ui embed.FS

// Content types of the answers.
const (
	typeJSON = "application/json"
	typeYAML = "application/yaml"
	typeHTML = "text/html; charset=utf-8"
)

// Spec returns a generated file: openapi3.json, openapi3.yaml (OpenAPI
// 3.0), swagger.json or swagger.yaml (Swagger 2.0, as swag writes it).
func Spec(name string) ([]byte, error) { return specs.ReadFile(name) }

// Register mounts /openapi.json, /openapi.yaml, /docs and /docs/* on r.
func Register(r chi.Router) {
	r.Get("/openapi.json", serveJSON)
	r.Get("/openapi.yaml", serveYAML)
	r.Get("/docs", serveIndex)
	r.Get("/docs/*", serveAsset)
}

// serveJSON serves GET /openapi.json.
//
//	@Summary		This API's description as OpenAPI 3.0 JSON
//	@Tags			docs
//	@Produce		json
//	@Success		200	{object}	map[string]interface{}	"OpenAPI 3.0 document"
//	@Router			/openapi.json [get]
func serveJSON(w http.ResponseWriter, r *http.Request) {
	serveFile(w, specs, "openapi3.json", typeJSON)
}

// serveYAML serves GET /openapi.yaml.
//
//	@Summary		This API's description as OpenAPI 3.0 YAML
//	@Tags			docs
//	@Produce		application/yaml
//	@Success		200	{string}	string	"OpenAPI 3.0 document"
//	@Router			/openapi.yaml [get]
func serveYAML(w http.ResponseWriter, r *http.Request) {
	serveFile(w, specs, "openapi3.yaml", typeYAML)
}

// serveIndex serves GET /docs.
//
//	@Summary		Swagger UI over /openapi.json
//	@Tags			docs
//	@Produce		html
//	@Success		200	{string}	string	"HTML page"
//	@Router			/docs [get]
func serveIndex(w http.ResponseWriter, r *http.Request) {
	setPageHeaders(w)
	serveFile(w, ui, "ui/index.html", typeHTML)
}

// setPageHeaders gives Swagger UI the policy the admin page at /ui/ has: its
// own scripts only, no framing (clickjacking), no sniffing.
func setPageHeaders(w http.ResponseWriter) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy",
		"default-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")
}

// serveAsset serves GET /docs/*: Swagger UI's scripts, styles and icons.
//
//	@Summary		Swagger UI assets (scripts, styles, icons), embedded
//	@Tags			docs
//	@Produce		html,text/css,text/javascript,image/png
//	@Param			asset	path		string	true	"file name, e.g. swagger-ui-bundle.js"
//	@Success		200		{string}	string	"the file"
//	@Failure		404		{string}	string	"no such file"
//	@Router			/docs/{asset} [get]
func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(chi.URLParam(r, "*"), "/")
	setPageHeaders(w)
	switch name {
	case "", "index.html":
		serveFile(w, ui, "ui/index.html", typeHTML)
	case "swagger-initializer.js":
		serveFile(w, ui, "ui/swagger-initializer.js", "text/javascript; charset=utf-8")
	default:
		http.ServeFileFS(w, r, swaggerfiles.FS, name)
	}
}

func serveFile(w http.ResponseWriter, fsys fs.FS, name, contentType string) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Write(data)
}
