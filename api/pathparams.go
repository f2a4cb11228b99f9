package api

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"
)

// pathParam is the named path parameter decoded exactly once, for every
// handler. chi matches on r.URL.RawPath when the request has one (the
// client escaped something Go would not, like %3D or %2F), so parameters
// come out still escaped; otherwise it matches r.URL.Path, already
// decoded, and decoding again would turn a literal "%41" into "A".
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if r.URL.RawPath == "" {
		return v
	}
	if decoded, err := url.PathUnescape(v); err == nil {
		return decoded
	}
	return v
}
