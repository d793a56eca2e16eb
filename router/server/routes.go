package server

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/request"
	"github.com/anvil-llm/anvil/router/statuspage"
)

// routes is the server's one gin engine: the front door, health, the admin API, /metrics and the
// status page, behind the middleware every request passes first.
func (s *Server) routes() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	// No proxy is trusted: the access log's client is the connection's peer (c.RemoteIP), and nothing
	// reads X-Forwarded-For; this keeps gin's ClientIP, should anything call it, from trusting it either.
	e.ForwardedByClientIP = false
	// No redirect may answer before authentication: gin's redirects run before any middleware and
	// would tell a caller without a token which routes exist (/admin/v1/admission/ -> 301).
	e.RedirectTrailingSlash, e.RedirectFixedPath = false, false
	// Authentication is global middleware: gin runs it before a route's handlers and before the 404
	// and 405 answers alike, so an unauthenticated caller learns nothing about which routes exist.
	e.Use(s.arrive, s.track, s.recoverPanics, withRequestID, s.authenticate())
	if s.tracer != nil {
		e.Use(s.startSpan) // tracing.go: only with tracing on, so off costs no handler at all
	}
	e.NoRoute(func(c *gin.Context) {
		s.log.Info("no such route", "request_id", requestID(c), "method", c.Request.Method, "status", http.StatusNotFound)
		abort(c, errNotFound)
	})
	e.NoMethod(func(c *gin.Context) {
		s.log.Info("method not allowed", "request_id", requestID(c), "route", c.FullPath(), "status", http.StatusMethodNotAllowed)
		abort(c, errMethod)
	})

	healthz := func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) }
	e.GET("/healthz", healthz)
	e.HEAD("/healthz", healthz) // load balancers probe with HEAD
	e.GET("/readyz", s.readyz)
	e.HEAD("/readyz", s.readyz)
	e.GET(HostReadyPath, s.readyzHost) // quiesce aside: the kubelet's readiness (readyhost.go)
	e.HEAD(HostReadyPath, s.readyzHost)

	v1 := e.Group("/v1")
	v1.POST("/chat/completions", s.proxy(request.ChatCompletions))
	v1.POST("/completions", s.proxy(request.Completions))
	v1.POST("/responses", s.proxy(request.Responses))
	v1.POST("/embeddings", s.proxy(request.Embeddings))
	v1.POST("/audio/transcriptions", s.audioForm(request.AudioTranscriptions))
	v1.POST("/audio/translations", s.audioForm(request.AudioTranslations))
	v1.POST("/audio/speech", s.proxy(request.AudioSpeech))
	v1.GET("/models", s.models)

	// /metrics needs the admin or an observer token here (authenticate; Prometheus' authorization setting);
	// metrics.listen serves it without one on a second, private address.
	e.GET("/metrics", gin.WrapH(s.metrics.handler(s.log)))
	e.GET(MemberMetricsPrefix+":tier/:member", s.memberMetrics) // each replica's own page (membermetrics.go)

	// The status page's files hold no secret and no data: authenticate lets exactly these paths
	// through (statuspage.Page.Public), while every JSON read they make stays behind the admin or an
	// observer token (the config status behind the admin token only).
	page := gin.WrapH(s.page)
	for _, p := range s.page.Paths() {
		e.GET(p, page)
		e.HEAD(p, page)
	}
	e.GET(statuspage.Bare, page)

	a := e.Group("/admin/v1")
	a.GET("/admission", s.admissionState)
	a.GET("/capacity", s.capacityState)
	a.GET("/decisions", s.recentDecisions)
	a.GET("/decisions/summary", s.decisionSummary)
	a.POST("/transition", s.transition)
	a.GET("/config", s.configEndpoint)
	a.POST("/config/reload", s.reloadEndpoint)
	return e
}

// recoverPanics turns a handler panic into a 500 when nothing was written yet; deferred lease releases
// have already run by the time it recovers.
func (s *Server) recoverPanics(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.log.Error("handler panic", "request_id", requestID(c), "path", c.FullPath())
			if c.Writer.Written() {
				// A response (a stream, say) is under way: abort the connection so the caller sees a
				// broken response, never a clean end.
				panic(http.ErrAbortHandler)
			}
			abort(c, errInternal)
		}
	}()
	c.Next()
}
