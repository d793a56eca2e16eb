package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
)

// MemberMetricsPrefix is where the router re-exposes each replica member's own /metrics page (vLLM's
// TTFT, KV-cache and preemption series): GET /metrics/members/<tier>/<member>. The members listen on
// loopback, inside the router's pod or host, so this is the only way a scraper reaches their pages;
// the prefix is under /metrics, so it takes the same token as /metrics (authenticate).
const MemberMetricsPrefix = "/metrics/members/"

// memberMetricsTimeout bounds one member page: the request, the member's answer and its whole body.
// Below the shipped ServiceMonitor's 5 s scrapeTimeout, so a slow member is a clean 502 the scraper
// sees, not a scrape the scraper abandons. A variable only so that tests can shorten it.
var memberMetricsTimeout = 3 * time.Second

// errMemberMetrics is the one answer for a member page that cannot be had; an ID that names no replica
// member is the admin API's errUnknownMember (404 unknown_member).
var errMemberMetrics = apiError{http.StatusBadGateway, "the member's metrics page could not be fetched", "upstream_error", "member_unreachable"}

// errMemberPage is every way a member page fails; its text never reaches the caller or the log.
var errMemberPage = errors.New("member metrics page")

// memberMetrics answers GET /metrics/members/:tier/:member with the member's own GET /metrics, its
// body and Content-Type unchanged. Only a member of a replica tier of the request's generation is
// fetched, at the endpoint the config names: the caller chooses an ID, never a URL, a path or a
// header, so this is no proxy. The page is read whole, at most scrape.MaxBodyBytes within
// memberMetricsTimeout, before a byte is written: a member that is down, slow, answers other than
// 200 or sends a larger page is a 502, never a truncated 200. No redirect is followed, no credential
// is sent, and nothing is counted as a request or recorded as a decision.
func (s *Server) memberMetrics(c *gin.Context) {
	g := s.genOf(c)
	endpoint, ok := replicaMember(g.cfg, c.Param("tier"), c.Param("member"))
	if !ok {
		abort(c, errUnknownMember)
		return
	}
	var transport http.RoundTripper
	if g.client != nil {
		transport = g.client.Transport
	}
	body, contentType, err := fetchMemberPage(c.Request.Context(), transport, endpoint, c.GetHeader("Accept"))
	if err != nil {
		s.log.Info("member metrics unavailable", "request_id", requestID(c), "tier", c.Param("tier"),
			"member", c.Param("member"), "status", errMemberMetrics.status)
		abort(c, errMemberMetrics)
		return
	}
	if contentType == "" {
		contentType = "text/plain; version=0.0.4"
	}
	c.Data(http.StatusOK, contentType, body)
}

// replicaMember finds a configured replica member's endpoint by its tier and member IDs.
func replicaMember(cfg config.Config, tier, member string) (string, bool) {
	for _, t := range cfg.Tiers() {
		if t.ID != tier || t.Kind != config.KindReplica {
			continue
		}
		if m, ok := t.Member(member); ok {
			return m.Endpoint, true
		}
	}
	return "", false
}

// fetchMemberPage GETs endpoint/metrics with only the scraper's Accept header (content negotiation),
// and returns the body, read whole, and its Content-Type.
func fetchMemberPage(ctx context.Context, transport http.RoundTripper, endpoint, accept string) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, memberMetricsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(endpoint, "/")+"/metrics", nil)
	if err != nil {
		return nil, "", errMemberPage
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	client := &http.Client{Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", errMemberPage
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", errMemberPage
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, scrape.MaxBodyBytes+1))
	if err != nil || len(body) > scrape.MaxBodyBytes {
		return nil, "", errMemberPage
	}
	return body, resp.Header.Get("Content-Type"), nil
}
