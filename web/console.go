// Package web serves the console: the build of the app in this directory (web/dist, checked in
// so that `go build` needs no Node), embedded in the binary. bc-server mounts Handler under the
// API's router so that every API route keeps precedence; see docs/console.md.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed all:dist
var dist embed.FS

// files is dist/ as the root of the site.
var files = func() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err)
	}
	return sub
}()

// contentSecurityPolicy lets the page load only its own script and style and call only its own
// origin: no inline script, no third party, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console's files for GET and HEAD: / is the page, /assets/ its script and
// style (names carry their content hash, so they are cached for good; the page is revalidated).
// Any other path or method is 404, as it was before the console was mounted.
func Handler() http.Handler {
	fileServer := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.NotFound(w, r)
			return
		}
		p := path.Clean("/" + r.URL.Path)
		switch {
		case p == "/" || p == "/index.html":
			h := w.Header()
			h.Set("Cache-Control", "no-cache")
			setSecurityHeaders(h)
			// Served by name rather than through the file server, which redirects /index.html to /.
			http.ServeFileFS(w, r, files, "index.html")
		case strings.HasPrefix(p, "/assets/") && exists(p):
			h := w.Header()
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
			setSecurityHeaders(h)
			fileServer.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

func exists(p string) bool {
	st, err := fs.Stat(files, strings.TrimPrefix(p, "/"))
	return err == nil && !st.IsDir()
}
