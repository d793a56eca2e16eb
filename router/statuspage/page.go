// Package statuspage holds the router's operator status page: one HTML page, its stylesheet, its
// script and its icon, embedded in the binary and served under Prefix with strict security headers.
//
// The page holds no secret and no data: it is the same bytes for everyone, so its files are the one
// part of /admin/ that answers without the admin token (Public says exactly which paths). Everything
// it shows it reads in the browser from the existing admin endpoints (capacity JSON, /metrics, the
// decision ring) with the token the operator types, and its buttons call the transition endpoint; the
// router keeps no state for it.
//
// Reading guide: page.go (this file) serves the files; assets/ holds them: index.html (the markup),
// style.css, app.js (fetching, rate arithmetic over successive /metrics reads, rendering with
// textContent only, the transition flow) and favicon.svg.
package statuspage

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"time"
)

// Prefix is where the page lives. Index is the page itself; Bare is Prefix without its slash, which
// only redirects to Index.
const (
	Prefix = "/admin/ui/"
	Index  = Prefix
	Bare   = "/admin/ui"
)

// ContentSecurityPolicy allows the page its own origin only: its own script and stylesheet (no
// inline script, style attribute or eval), fetches back to the router, no plugins, no base
// rewriting, no form submission anywhere (the sign-in form is handled by the script, and its input
// has no name, so a page without its script could not put the token in a URL either) and no framing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed assets
var assets embed.FS

// file is one embedded asset, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

// Page serves the embedded files. Create it with New.
type Page struct {
	files map[string]file // request path -> file
}

// contentTypes are the asset kinds the page is made of; a file of any other kind is not served.
func contentTypes() map[string]string {
	return map[string]string{
		".html": "text/html; charset=utf-8",
		".css":  "text/css; charset=utf-8",
		".js":   "text/javascript; charset=utf-8",
		".svg":  "image/svg+xml",
	}
}

// New reads the embedded assets once. assets/index.html is served at Index; every other asset at
// Prefix + its name.
func New() *Page {
	p := &Page{files: map[string]file{}}
	types := contentTypes()
	entries, _ := fs.ReadDir(assets, "assets") // embedded at build time: cannot fail
	for _, e := range entries {
		ct, ok := types[path.Ext(e.Name())]
		if e.IsDir() || !ok {
			continue
		}
		body, _ := fs.ReadFile(assets, "assets/"+e.Name())
		sum := sha256.Sum256(body)
		route := Prefix + e.Name()
		if e.Name() == "index.html" {
			route = Index
		}
		p.files[route] = file{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return p
}

// Paths returns the request paths of the page's files, sorted: the routes to register.
func (p *Page) Paths() []string {
	out := make([]string, 0, len(p.files))
	for k := range p.files {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Public reports whether path is one of the page's files or Bare: the only paths under /admin/ that
// need no token. Any other path under Prefix is an ordinary admin path.
func (p *Page) Public(path string) bool {
	_, ok := p.files[path]
	return ok || path == Bare
}

// SecurityHeaders sets the headers every answer of the page carries.
func SecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// ServeHTTP answers GET and HEAD for the page's files (conditional requests by ETag; the browser
// revalidates, so a new binary's page is never mixed with an old cached script) and redirects Bare
// to Index. Anything else is 404 or 405 with a plain fixed body.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	SecurityHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == Bare {
		http.Redirect(w, r, Index, http.StatusMovedPermanently)
		return
	}
	f, ok := p.files[r.URL.Path]
	if !ok {
		http.Error(w, "no such file", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", f.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}
