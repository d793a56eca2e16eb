package server

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/manage"
)

const (
	headerRequestID    = "X-Request-ID"
	ctxRequestID       = "anvil.request_id"
	ctxCallerRequestID = "anvil.caller_request_id"
)

// withRequestID gives the request its ID, always the router's own (12 random bytes in hex), and
// returns it on the response: the ID a caller quotes to find the decision record. The caller's own
// X-Request-ID never replaces it (a reused ID would name two records); once the caller is
// authenticated it may be kept beside it (correlate).
func withRequestID(c *gin.Context) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	c.Set(ctxRequestID, id)
	c.Header(headerRequestID, id)
	c.Next()
}

func requestID(c *gin.Context) string { return c.GetString(ctxRequestID) }

// callerRequestID is the caller's X-Request-ID kept by correlate, "" when none.
func callerRequestID(c *gin.Context) string { return c.GetString(ctxCallerRequestID) }

// correlate keeps an authenticated caller's X-Request-ID as the request's correlation value when it
// passes the generation's filter (see secretFilter), and otherwise drops it: counted, and logged at
// debug with the router's request ID and never the value. An absent header is nothing to count.
func (s *Server) correlate(c *gin.Context, g *generation) {
	values := c.Request.Header.Values(headerRequestID)
	if len(values) == 0 {
		return
	}
	result := g.ids.check(values)
	s.metrics.callerIDs.WithLabelValues(result.String()).Inc()
	if result != callerIDKept {
		s.log.Debug("caller request id dropped", "request_id", requestID(c), "reason", result.String())
		return
	}
	c.Set(ctxCallerRequestID, values[0])
}

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

// authenticate guards every path under /v1 with the caller tokens, and every path under /admin and
// /metrics with the admin token or, for a read (GET, HEAD), an observer token, whether or not a route
// exists there. An observer token on any other admin request is refused with 403 insufficient_role;
// a caller token opens nothing outside /v1 and an admin or observer token nothing inside it (both
// 401, as an unknown token). The one exception is the status page's own files (exact paths, see
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
		var refusal apiError
		scope := ""
		switch p := c.Request.URL.Path; {
		case s.page.Public(p):
			c.Next()
			return
		case p == "/v1" || strings.HasPrefix(p, "/v1/"):
			scope = "front"
			if i, ok := matching(c, g.callers); ok {
				c.Set(ctxCaller, i) // the caller's budget holder and label (callers.go)
			} else {
				refusal = errUnauthenticated
			}
		case p == "/admin" || strings.HasPrefix(p, "/admin/"), p == "/metrics" || strings.HasPrefix(p, "/metrics/"):
			scope, refusal = "admin", operatorRefusal(c, g)
			if strings.HasPrefix(p, "/metrics") {
				scope = "metrics"
			}
		default:
			c.Next()
			return
		}
		if refusal.status != 0 {
			s.log.Info("request refused: authentication", "request_id", requestID(c), "scope", scope,
				"route", c.FullPath(), "status", refusal.status)
			abort(c, refusal)
			return
		}
		s.correlate(c, g)
		c.Next()
	}
}

// ctxReadOnly marks a request an observer token opened: the transition endpoint then answers only
// the status action (readOnlyAction).
const ctxReadOnly = "anvil.read_only"

// operatorRefusal is the refusal of an admin or /metrics request, or the zero apiError when its token
// opens it: the admin token always, an observer token for a read (GET or HEAD) but of the configuration
// status (its file path, changed keys and refusal texts, which can name token files and environment
// variables, are the admin's), and for
// the transition endpoint, which it marks read-only. Both lists are always compared, so timing does not tell an
// observer token from the admin token.
func operatorRefusal(c *gin.Context, g *generation) apiError {
	_, admin := matching(c, g.admin)
	_, observer := matching(c, g.observers)
	r := c.Request
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch {
	case admin:
		return apiError{}
	case observer && read && r.URL.Path != manage.ConfigPath:
		return apiError{}
	case observer && r.Method == http.MethodPost && r.URL.Path == manage.TransitionPath:
		c.Set(ctxReadOnly, true) // transition-status is a read; every other action is refused there
		return apiError{}
	case observer:
		return errReadOnly
	}
	return errForbiddenAdmin
}

// readOnlyRefused reports whether req is an action the request's token may not take: anything but
// status under an observer token, dry runs included.
func readOnlyRefused(c *gin.Context, req manage.Request) bool {
	return c.GetBool(ctxReadOnly) && req.Action != manage.ActionStatus
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
