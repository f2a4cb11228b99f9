// Package web is ferry's admin page, served at /ui/ by the HTTP listener.
//
// It is plain HTML, CSS and JavaScript modules under assets/, embedded in
// the binary with go:embed: no CDN, no build step. The page calls only
// the public HTTP API on the same origin (the gateway, the schema
// registry's Confluent routes and /metrics), so it can do nothing a curl
// user could not. Views are hash routes (#/topics, #/messages, …) so the
// server needs one entry point: any path under /ui/ that is not an asset
// answers index.html.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// Prefix is where Handler expects to be mounted.
const Prefix = "/ui/"

// Handler serves the admin page under Prefix: the embedded assets, and
// index.html for any other path so deep links survive a reload.
func Handler() http.Handler {
	root, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	files := http.FileServerFS(root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(path.Clean(r.URL.Path), strings.TrimSuffix(Prefix, "/"))
		name = strings.TrimPrefix(name, "/")
		if name == "" || !exists(root, name) {
			name = "index.html"
		}
		// The page is small and changes with the binary: revalidate always.
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy",
			"default-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")
		if name == "index.html" {
			http.ServeFileFS(w, r, root, "index.html")
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		files.ServeHTTP(w, r2)
	})
}

func exists(root fs.FS, name string) bool {
	st, err := fs.Stat(root, name)
	return err == nil && !st.IsDir()
}
