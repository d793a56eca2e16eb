package statuspage_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/statuspage"
)

func serve(p *statuspage.Page, method, target string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec
}

func TestPageFiles(t *testing.T) {
	p := statuspage.New()
	want := []string{"/admin/ui/", "/admin/ui/app.js", "/admin/ui/favicon.svg", "/admin/ui/style.css"}
	assert.Equal(t, want, p.Paths())
	for _, path := range want {
		assert.True(t, p.Public(path), path)
	}
	tests := []struct {
		name, method, target string
		status               int
	}{
		{"the page", http.MethodGet, "/admin/ui/", http.StatusOK},
		{"head", http.MethodHead, "/admin/ui/app.js", http.StatusOK},
		{"bare prefix", http.MethodGet, "/admin/ui", http.StatusMovedPermanently},
		{"index by name", http.MethodGet, "/admin/ui/index.html", http.StatusNotFound},
		{"unknown file", http.MethodGet, "/admin/ui/x.js", http.StatusNotFound},
		{"post", http.MethodPost, "/admin/ui/", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(p, tt.method, tt.target)
			assert.Equal(t, tt.status, rec.Code)
			assert.Equal(t, statuspage.ContentSecurityPolicy, rec.Header().Get("Content-Security-Policy"), "every answer carries the headers")
			assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
			assert.Equal(t, "no-referrer", rec.Header().Get("Referrer-Policy"))
		})
	}
	for _, path := range []string{"/admin/ui/index.html", "/admin/uiX", "/admin/ui//", "/admin/v1/capacity", "/ADMIN/UI/", ""} {
		assert.False(t, p.Public(path), path)
	}
}

// TestAssetsKeepTheirPromises reads the embedded files as the browser gets them: no inline script,
// style or event handler, nothing loaded from anywhere but the page's own directory, no markup built
// from strings, no eval, and the token kept in sessionStorage only.
func TestAssetsKeepTheirPromises(t *testing.T) {
	p := statuspage.New()
	body := func(path string) string {
		rec := serve(p, http.MethodGet, path)
		require.Equal(t, http.StatusOK, rec.Code, path)
		return rec.Body.String()
	}
	html := body("/admin/ui/")
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]`),                           // an inline script body
		regexp.MustCompile(`(?i)\sstyle\s*=`),                                    // a style attribute
		regexp.MustCompile(`(?i)\son[a-z]+\s*=`),                                 // an event handler attribute
		regexp.MustCompile(`(?i)(?:src|href)="(?:https?:|//|data:|javascript:)`), // anything not the page's own
		regexp.MustCompile(`(?i)<style`),
	} {
		assert.NotRegexp(t, bad, html)
	}
	assert.NotRegexp(t, regexp.MustCompile(`<input[^>]*\sname=`), html, "the token input has no name: a form without its script cannot send it")
	js := body("/admin/ui/app.js")
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
		"localStorage", "document.cookie", "http://", "https://", "setAttribute(\"style\"", ".style."} {
		assert.NotContains(t, js, bad)
	}
	assert.Contains(t, js, "sessionStorage.setItem(TOKEN_KEY")
	css := body("/admin/ui/style.css")
	assert.NotContains(t, css, "@import")
	assert.NotContains(t, css, "url(")
}

// FuzzPublic: whatever the path, only the page's exact files (and the bare prefix) are public, and
// serving any path never panics nor answers 200 for a path that is not one of the files.
func FuzzPublic(f *testing.F) {
	p := statuspage.New()
	for _, s := range append(p.Paths(), "/admin/ui", "/admin/ui/../v1/capacity", "/admin/ui/%2e%2e/", "/admin/ui//app.js",
		"/admin/ui/app.js\x00", "/admin/ui/app.js/", "/admin/uí/", strings.Repeat("/admin/ui/", 100)) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		files := p.Paths()
		if p.Public(path) != (slices.Contains(files, path) || path == statuspage.Bare) {
			t.Fatalf("Public(%q) disagrees with the file list", path)
		}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL.Path = path
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		if rec.Code == http.StatusOK && !slices.Contains(files, path) {
			t.Fatalf("%q answered 200", path)
		}
		if rec.Header().Get("Content-Security-Policy") != statuspage.ContentSecurityPolicy {
			t.Fatalf("%q answered without the CSP", path)
		}
	})
}
