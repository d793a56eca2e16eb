package qualification

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/manage"
)

// The router's read-only admin surfaces the run records (the transition endpoint is router/manage's).
const (
	pathCapacity  = "/admin/v1/capacity"
	pathAdmission = "/admin/v1/admission"
	pathSummary   = "/admin/v1/decisions/summary"
	pathReadyz    = "/readyz"
)

var (
	errNotCapacity = errors.New("the answer is not the router's capacity JSON")
	errNotSummary  = errors.New("the answer is not a decision summary")
	errNotReadyz   = errors.New("the answer is not the router's readiness")
)

// routerAPI reads the router's admin surfaces with the admin token and sends transitions through
// router/manage, the request function the CLI verbs and the MCP tool use.
type routerAPI struct {
	web    web
	base   string
	token  string
	manage *manage.Client
	tier   string
}

func newRouterAPI(w web, p *Plan, adminToken string) (*routerAPI, error) {
	mc, err := manage.NewClient(w.hc, p.Router.URL, adminToken)
	if err != nil {
		return nil, err
	}
	return &routerAPI{web: w, base: strings.TrimRight(p.Router.URL, "/"), token: adminToken, manage: mc, tier: p.Tier.ID}, nil
}

// read GETs one admin path and requires 200.
func (r *routerAPI) read(ctx context.Context, path string) ([]byte, error) {
	a, err := r.web.get(ctx, r.base+path, r.token, maxAnswerBytes)
	if err != nil {
		return nil, err
	}
	if a.status != http.StatusOK {
		return nil, fmt.Errorf("%s answered HTTP %d", path, a.status)
	}
	return a.body, nil
}

// capacityTier is the tier's entry of the capacity JSON: the admission snapshot's keys, which are
// manage.Tier's (telemetry, passive health and the queue are recorded but not read).
func (r *routerAPI) capacity(ctx context.Context) ([]byte, manage.Tier, error) {
	body, err := r.read(ctx, pathCapacity)
	if err != nil {
		return nil, manage.Tier{}, err
	}
	t, err := capacityTier(body, r.tier)
	return body, t, err
}

// capacityTier finds one tier in a capacity JSON document.
func capacityTier(body []byte, id string) (manage.Tier, error) {
	var doc struct {
		Tiers []json.RawMessage `json:"tiers"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return manage.Tier{}, errNotCapacity
	}
	for _, raw := range doc.Tiers {
		var t manage.Tier
		if err := json.Unmarshal(raw, &t); err != nil {
			return manage.Tier{}, errNotCapacity
		}
		if t.ID == id {
			return t, nil
		}
	}
	return manage.Tier{}, fmt.Errorf("the router's capacity view has no tier %s", id)
}

// summary reads the decision summary.
func (r *routerAPI) summary(ctx context.Context) ([]byte, decisionlog.Summary, error) {
	body, err := r.read(ctx, pathSummary)
	if err != nil {
		return nil, decisionlog.Summary{}, err
	}
	s, err := parseSummary(body)
	return body, s, err
}

func parseSummary(body []byte) (decisionlog.Summary, error) {
	// Read tolerantly, as the capacity JSON is: the raw answer is what the run records, these are
	// only the counts it checks.
	var s decisionlog.Summary
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&s); err != nil || dec.More() || s.Records < 0 {
		return decisionlog.Summary{}, errNotSummary
	}
	return s, nil
}

// tierReadiness is the tier's entry of GET /readyz: members probed ready, and of those admitting.
type tierReadiness struct {
	Tier      string `json:"tier"`
	State     string `json:"state"`
	Ready     int    `json:"ready"`
	Admitting int    `json:"admitting"`
	Members   int    `json:"members"`
}

// readyz reads GET /readyz (no token: it is the balancers' probe) and returns the tier's entry. A 503
// is an answer too: another tier may be what is unready.
func (r *routerAPI) readyz(ctx context.Context) ([]byte, tierReadiness, error) {
	a, err := r.web.get(ctx, r.base+pathReadyz, "", maxAnswerBytes)
	if err != nil {
		return nil, tierReadiness{}, err
	}
	if a.status != http.StatusOK && a.status != http.StatusServiceUnavailable {
		return nil, tierReadiness{}, fmt.Errorf("%s answered HTTP %d", pathReadyz, a.status)
	}
	t, err := readyTier(a.body, r.tier)
	return a.body, t, err
}

func readyTier(body []byte, tier string) (tierReadiness, error) {
	var doc struct {
		Tiers []tierReadiness `json:"tiers"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return tierReadiness{}, errNotReadyz
	}
	for _, t := range doc.Tiers {
		if t.Tier == tier {
			return t, nil
		}
	}
	return tierReadiness{}, fmt.Errorf("the router's readiness lists no replica tier %s", tier)
}

// status is the tier's state through the transition API (action status): states and reasons of the
// tier and of every member, as the router holds and persists them.
func (r *routerAPI) status(ctx context.Context) (manage.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	return r.manage.Transition(ctx, manage.Request{Action: manage.ActionStatus, Tier: r.tier})
}

// transition sends one member transition.
func (r *routerAPI) transition(ctx context.Context, action, member string, wait int) (manage.Response, error) {
	req := manage.Request{Action: action, Tier: r.tier, MemberID: member, Reason: QuiesceReason}
	timeout := readTimeout
	if action == manage.ActionDrain {
		req.WaitSeconds = wait
		timeout += time.Duration(wait) * time.Second // the router answers when the drain ends or its wait passes
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return r.manage.Transition(ctx, req)
}

// The router's cumulative counters a phase's accounting reads from GET /metrics (admin token).
const (
	metricRequests = "anvil_router_requests_total"
	metricAttempts = "anvil_router_upstream_attempts_total"
)

var errNotRouterMetrics = errors.New("the router's /metrics page has no request counters")

// counters are the tier's cumulative decision counts by outcome and upstream attempts by member.
type counters struct {
	Outcomes map[string]int64 `json:"outcomes"`
	Attempts map[string]int64 `json:"attempts"`
}

func (c counters) decisions() int64 {
	var n int64
	for _, v := range c.Outcomes {
		n += v
	}
	return n
}

func (c counters) admitted() int64 {
	return c.decisions() - c.Outcomes["refused"] - c.Outcomes["not_admitted"]
}

func (c counters) attempts() int64 {
	var n int64
	for _, v := range c.Attempts {
		n += v
	}
	return n
}

// minus is c - before, key by key.
func (c counters) minus(before counters) counters {
	d := counters{Outcomes: map[string]int64{}, Attempts: map[string]int64{}}
	for k, v := range c.Outcomes {
		d.Outcomes[k] = v - before.Outcomes[k]
	}
	for k, v := range c.Attempts {
		d.Attempts[k] = v - before.Attempts[k]
	}
	return d
}

func (r *routerAPI) counters(ctx context.Context) (counters, error) {
	a, err := r.web.get(ctx, r.base+"/metrics", r.token, maxMetricBytes)
	if err != nil {
		return counters{}, err
	}
	if a.status != http.StatusOK {
		return counters{}, fmt.Errorf("/metrics answered HTTP %d", a.status)
	}
	return parseCounters(a.body, r.tier)
}

// parseCounters reads the tier's series of anvil_router_requests_total (summed by outcome) and
// anvil_router_upstream_attempts_total (by member) from a Prometheus text page. Values must be
// finite non-negative integers below 2^53. A family with no series yet is all zeros: the phase's
// accounting then fails on its own counts if the page is not the router's.
func parseCounters(body []byte, tier string) (counters, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return counters{}, errNotRouterMetrics
	}
	c := counters{Outcomes: map[string]int64{}, Attempts: map[string]int64{}}
	for _, f := range []struct {
		name, key string
		into      map[string]int64
	}{{metricRequests, "outcome", c.Outcomes}, {metricAttempts, "member", c.Attempts}} {
		mf := fams[f.name]
		if mf == nil {
			continue // nothing counted yet: a family appears with its first series
		}
		for _, m := range mf.GetMetric() {
			if !hasLabel(m, "tier", tier) {
				continue
			}
			v := m.GetCounter().GetValue()
			if m.GetCounter() == nil || !(v >= 0 && v < 1<<53) || math.Trunc(v) != v {
				return counters{}, errNotRouterMetrics
			}
			k := label(m, f.key)
			if !printable(k, maxText) {
				return counters{}, errNotRouterMetrics
			}
			f.into[k] += int64(v)
		}
	}
	return c, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
