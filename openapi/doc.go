// Package openapi holds ferry's OpenAPI description of its HTTP API and
// serves it: /openapi.json and /openapi.yaml (OpenAPI 3.0) and Swagger UI
// at /docs, its assets embedded (no CDN).
//
// The description is generated, never edited by hand: swag reads the
// annotations on the handlers in api/ (and on this package's own) and
// writes swagger.json and swagger.yaml (Swagger 2.0); gen converts them to
// openapi3.json and openapi3.yaml. `make openapi` runs both with the
// pinned swag; a test fails when the committed files are out of date, and
// another when a route served by api.Gateway.Handler is missing from the
// description or the description names a route that is not served.
//
// api imports this package to mount it; this package must not import api.
package openapi
