package server

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/ident"
)

const (
	headerRequestID = "X-Request-ID"
	ctxRequestID    = "anvil.request_id"
)

// withRequestID accepts a well-formed X-Request-ID from the caller or makes one, and returns it on the
// response, so a caller can correlate its logs with the router's decision records.
func withRequestID(c *gin.Context) {
	id := c.GetHeader(headerRequestID)
	if !ident.ValidRequestID(id) {
		var b [12]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	c.Set(ctxRequestID, id)
	c.Header(headerRequestID, id)
	c.Next()
}

func requestID(c *gin.Context) string { return c.GetString(ctxRequestID) }

// bearer extracts the token of an "Authorization: Bearer <token>" header.
func bearer(c *gin.Context) (string, bool) {
	h := c.GetHeader("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// authenticate guards every path under /v1 with the caller tokens and every path under /admin, and
// /metrics, with the admin token (none configured: every admin request is refused), whether or not a
// route exists there. The one exception is the status page's own files (exact paths, see
// statuspage.Page.Public): they are the same static bytes for everyone, and the page asks for the
// token itself before it reads anything.
// A refusal is logged at info with the request ID and the matched route pattern, never the token, the
// path the caller wrote or the body.
//
// The tokens are the request's generation's: a reload that rotates them refuses the old ones for
// every request that arrives after the swap.
func (s *Server) authenticate() gin.HandlerFunc {
	return func(c *gin.Context) {
		g := s.genOf(c)
		callers, admin := g.callers, g.admin
		secrets, refusal, scope := []config.Secret(nil), errUnauthenticated, ""
		switch p := c.Request.URL.Path; {
		case s.page.Public(p):
			c.Next()
			return
		case p == "/v1" || strings.HasPrefix(p, "/v1/"):
			secrets, scope = callers, "front"
		case p == "/admin" || strings.HasPrefix(p, "/admin/"):
			secrets, refusal, scope = admin, errForbiddenAdmin, "admin"
		case p == "/metrics" || strings.HasPrefix(p, "/metrics/"):
			secrets, refusal, scope = admin, errForbiddenAdmin, "metrics"
		default:
			c.Next()
			return
		}
		i, ok := matching(c, secrets)
		if !ok {
			s.log.Info("request refused: authentication", "request_id", requestID(c), "scope", scope,
				"route", c.FullPath(), "status", refusal.status)
			abort(c, refusal)
			return
		}
		if scope == "front" {
			c.Set(ctxCaller, i) // the fair body budget's caller (callers.go)
		}
		c.Next()
	}
}

// matching reports which of secrets the request's bearer token is, if any. Every secret is compared,
// in constant time per comparison, so timing does not reveal which one matched.
func matching(c *gin.Context, secrets []config.Secret) (int, bool) {
	token, ok := bearer(c)
	matched := -1
	for i, s := range secrets {
		if ok && s.Matches(token) {
			matched = i
		}
	}
	return matched, matched >= 0
}
