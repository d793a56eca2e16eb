package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/capacity"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/relay"
	"github.com/anvil-llm/anvil/router/request"
	"github.com/anvil-llm/anvil/router/routing"
)

// proxy returns the handler of one OpenAI endpoint. The walk itself is routing's Attempt; the handler
// adds HTTP: the body, the error answers and the one relay attempt. Finish runs in the one defer, so
// the lease is released and the request recorded on every path, panics included. The request runs
// under the generation it took on arrival (or, when its admission raced a reload, the one it was
// admitted under: resolveAdmit).
func (s *Server) proxy(ep request.Endpoint) gin.HandlerFunc {
	return func(c *gin.Context) {
		g := s.genOf(c)
		at := g.router.Begin(requestID(c), s.now())
		at.Correlate(callerRequestID(c))
		_, caller := s.callerOf(c, g)
		at.Identify(caller)
		defer s.finish(c, &at)

		req, ok := s.parse(c, g, ep)
		if !ok {
			return
		}
		g, tier, target, ok := s.resolveAdmit(c, g, &at, req)
		if !ok {
			return
		}
		at.Dispatched()
		up := relay.Upstream{
			BaseURL: target.BaseURL, Path: ep.Path(), Body: req.Body(tier.ServedModel), Stream: req.Stream,
			PassThrough: ep == request.AudioSpeech, // audio bytes, relayed as they come
			RequestID:   requestID(c), APIKey: tier.APIKey.Reveal(),
		}
		s.propagate(c, &up)
		res := g.relay.Do(c.Request.Context(), c.Writer, up)
		at.Relayed(res.Outcome, res.Status, res.FirstByte)
		at.Used(res.Usage)
		c.Abort() // the relay wrote the response
		if res.Cut {
			panic(http.ErrAbortHandler) // a broken byte stream must look broken, never cleanly ended
		}
	}
}

// resolveAdmit resolves the request's alias, applies the gates and admits it, answering every
// refusal itself. It returns the generation the request was admitted under: the one it arrived
// with, unless a reload was published while it was being admitted (or while it waited in a queue),
// in which case the walk moves to the generation in force, resolves again (a removed alias is then
// the ordinary 404) and admits there, keeping its place in a queue.
func (s *Server) resolveAdmit(c *gin.Context, g *generation, at *routing.Attempt, req request.Request) (*generation, config.Tier, routing.Target, bool) {
	s.admitting(c)
	defer s.admitted(c)
	for {
		tier, err := at.Resolve(req)
		if err != nil {
			abort(c, requestError(err))
			return g, config.Tier{}, routing.Target{}, false
		}
		target, err := s.admit(c, at, tier)
		switch {
		case errors.Is(err, routing.ErrSuperseded):
			select {
			case <-g.done:
			case <-c.Request.Context().Done():
				at.Canceled(s.now())
				return g, config.Tier{}, routing.Target{}, false // the caller left: nothing to answer
			}
			g = g.next.Load()
			at.Rebase(g.router)
			continue
		case errors.Is(err, context.Canceled):
			return g, config.Tier{}, routing.Target{}, false // the caller left while queued: nothing to answer
		case err != nil:
			s.metrics.refused(tier.ID, err)
			abort(c, admissionError(err))
			return g, config.Tier{}, routing.Target{}, false
		}
		s.serving(c, tier) // the admitting generation's tier: a reload may have moved the walk
		return g, tier, target, true
	}
}

// admit asks for a lease and, when the tier has an admission queue and no capacity, waits in it: on
// the ticket's wake-ups, until the queue timeout, until the caller leaves (context.Canceled, the
// attempt records the cancellation) or until a shutdown past its grace cuts the wait
// (routing.ErrShuttingDown, answered with a 503). A reload published meanwhile ends the wait with
// routing.ErrSuperseded (its commit wakes every waiter). The waiting lives here, in the shell; the
// walk only answers.
func (s *Server) admit(c *gin.Context, at *routing.Attempt, tier config.Tier) (routing.Target, error) {
	target, err := at.Admit(tier, s.now())
	for errors.Is(err, routing.ErrQueued) {
		wake, deadline := at.Wait()
		timer := time.NewTimer(deadline.Sub(s.now()))
		select {
		case <-wake:
		case <-timer.C:
		case <-c.Request.Context().Done():
		}
		timer.Stop()
		// An ended context wins over a wake-up that came with it: a shutdown's cut ends every
		// request's context first, and the leases the cut requests then release wake the queue, so a
		// woken waiter must not be admitted into the shutdown.
		if ctx := c.Request.Context(); ctx.Err() != nil {
			if errors.Is(context.Cause(ctx), relay.ErrShutdown) {
				return routing.Target{}, at.ShutDown(tier, s.now()) // answered: the caller is still there
			}
			at.Canceled(s.now())
			return routing.Target{}, context.Canceled
		}
		target, err = at.Admit(tier, s.now())
	}
	return target, err
}

// parse reads and decodes the body once, within the body limit, the in-flight budget and the caller's
// share of it. They are checked before the first byte is read: a declared length over the limit gets
// 413, and a body that does not fit the budget or the share gets 503, without a "100 Continue"
// (net/http sends it only when the handler first reads) and without a byte of the body in memory.
// The budget is held for the read and the parse; an admitted request's body then lives as long as
// its lease, which admission bounds. A body slower than the minimum upload rate is cut with 408.
func (s *Server) parse(c *gin.Context, g *generation, ep request.Endpoint) (request.Request, bool) {
	lim := g.cfg.Limits()
	limit, declared := lim.MaxBodyBytes, c.Request.ContentLength
	if declared > limit {
		abort(c, errTooLarge)
		return request.Request{}, false
	}
	reserve := limit // an unknown length may use the whole limit
	if declared >= 0 {
		reserve = declared
	}
	h, caller := s.callerOf(c, g)
	if refused := s.bodies.take(h, reserve); refused != budgetOK {
		s.bodyRefused(c, caller, refused)
		return request.Request{}, false
	}
	defer s.bodies.give(h, reserve)
	body, err := readBody(s.bodyReader(c, lim, time.Now().Add(bodyReadTimeout)), declared, limit)
	switch {
	case errors.Is(err, errBodyTooLarge):
		abort(c, errTooLarge)
		return request.Request{}, false
	case errors.Is(err, errUploadTooSlow):
		s.metrics.bodyRefused(caller, bodyRefusedTooSlow)
		abort(c, errTooSlow)
		return request.Request{}, false
	case err != nil:
		abort(c, errUnreadable)
		return request.Request{}, false
	}
	req, err := request.Parse(ep, body)
	if err != nil {
		abort(c, requestError(err))
		return request.Request{}, false
	}
	return req, true
}

// bodyReader is the request's body under the minimum upload rate of lim; bound is the read deadline
// the body has without it.
func (s *Server) bodyReader(c *gin.Context, lim config.Limits, bound time.Time) io.Reader {
	if lim.MinUploadBytesPerSecond == 0 {
		return c.Request.Body
	}
	rule := minRate{perSecond: lim.MinUploadBytesPerSecond, grace: lim.MinUploadGrace}
	return newRateReader(c.Request.Body, rule, s.clock, bodyDeadline(c.Writer), bound)
}

// bodyRefused answers and counts a body the budget refused.
func (s *Server) bodyRefused(c *gin.Context, caller string, refused budgetRefusal) {
	if refused == budgetCallerShare {
		s.metrics.bodyRefused(caller, bodyRefusedShare)
		abort(c, errCallerBusy)
		return
	}
	s.metrics.bodyRefused(caller, bodyRefusedBudget)
	abort(c, errBusy)
}

var errBodyTooLarge = errors.New("server: request body over the limit")

// readBody reads a body to its end: into one buffer of exactly the declared length when there is one
// (net/http holds the body to it), else growing up to limit.
func readBody(r io.Reader, declared, limit int64) ([]byte, error) {
	if declared < 0 {
		body, err := io.ReadAll(io.LimitReader(r, limit+1))
		if err == nil && int64(len(body)) > limit {
			return nil, errBodyTooLarge
		}
		return body, err
	}
	body := make([]byte, declared)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	// Reading the end tells net/http the body is consumed, so it notices a client that goes away.
	var probe [1]byte
	switch n, err := r.Read(probe[:]); {
	case n > 0:
		return nil, errBodyTooLarge
	case !errors.Is(err, io.EOF):
		return nil, err
	}
	return body, nil
}

// models lists the aliases, in OpenAI's shape: callers name aliases, never tiers or members.
func (s *Server) models(c *gin.Context) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	aliases := s.genOf(c).cfg.Aliases()
	out := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: make([]model, 0, len(aliases))}
	for _, a := range aliases {
		out.Data = append(out.Data, model{ID: a.ID, Object: "model", Created: s.started.Unix(), OwnedBy: "anvil"})
	}
	c.JSON(http.StatusOK, out)
}

// Reasons /readyz gives for answering 503.
const (
	unreadyNotProbed    = "not_probed" // the first readiness round has not completed
	unreadyNoMember     = "tier_without_ready_member"
	unreadyNotAdmitting = "tier_not_admitting"    // quiesced, or every ready member quiesced: maintenance
	unreadySinkFailing  = "decision_sink_failing" // failing longer than decision_log.unready_after
)

// readyz answers 200 once the first readiness round has completed and every replica tier can admit
// (the tier is not quiesced and at least one member is both probed ready and not quiesced), unless the
// decision sink has failed for longer than decision_log.unready_after. A quiesced replica tier (or one
// whose every ready member is quiesced) is a host under maintenance, so the balancer in front stops
// sending to it. The body says per tier how many members are ready and how many of those admit and,
// when not ready, why.
func (s *Server) readyz(c *gin.Context) { s.readiness(c, false) }

// readiness answers /readyz, or HostReadyPath (readyhost.go) when host is set: then a quiesce is no reason.
func (s *Server) readiness(c *gin.Context, host bool) {
	type tierReady struct {
		Tier      string `json:"tier"`
		State     string `json:"state"`
		Ready     int    `json:"ready"`
		Admitting int    `json:"admitting"`
		Members   int    `json:"members"`
	}
	out := struct {
		Ready   bool        `json:"ready"`
		Reasons []string    `json:"reasons,omitempty"`
		Tiers   []tierReady `json:"tiers"`
	}{Tiers: []tierReady{}}
	if !s.probed.Load() {
		out.Reasons = append(out.Reasons, unreadyNotProbed)
	}
	noMember, notAdmitting := false, false
	g := s.genOf(c)
	for _, t := range g.cfg.Tiers() {
		if t.Kind != config.KindReplica {
			continue
		}
		adm, _ := g.router.Admission().Tier(t.ID)
		snap := adm.Snapshot()
		quiesced := map[string]bool{}
		for _, m := range snap.Members {
			if !m.Retiring {
				quiesced[m.ID] = m.State == admission.StateQuiesced
			}
		}
		tr := tierReady{Tier: t.ID, State: snap.State, Members: len(t.Members)}
		for id, ok := range s.prober.State().Snapshot(t.ID) {
			if ok {
				tr.Ready++
				if !quiesced[id] {
					tr.Admitting++
				}
			}
		}
		noMember = noMember || tr.Ready == 0
		notAdmitting = notAdmitting || snap.State != admission.StateAdmitting || tr.Ready > 0 && tr.Admitting == 0
		out.Tiers = append(out.Tiers, tr)
	}
	if noMember {
		out.Reasons = append(out.Reasons, unreadyNoMember)
	}
	if notAdmitting && !host {
		out.Reasons = append(out.Reasons, unreadyNotAdmitting)
	}
	if s.sinkFailing(g) {
		out.Reasons = append(out.Reasons, unreadySinkFailing)
	}
	out.Ready = len(out.Reasons) == 0
	status := http.StatusOK
	if !out.Ready {
		status = http.StatusServiceUnavailable
	}
	c.JSON(status, out)
}

// sinkFailing reports whether the decision sink's writes have failed, without a success, for longer
// than decision_log.unready_after (never when that is 0).
func (s *Server) sinkFailing(g *generation) bool {
	after := g.cfg.DecisionLog().UnreadyAfter
	if after <= 0 {
		return false
	}
	since := s.decisions.Stats().SinkFailingSince
	return !since.IsZero() && s.now().Sub(since) > after
}

// admissionState is the admin view of every tier's admission snapshot, with each replica member's
// passive health read after it. Member reasons stay off it.
func (s *Server) admissionState(c *gin.Context) {
	src := s.current().sources
	view := capacity.AdmissionView(src.Admission.Snapshots())
	capacity.AttachReadiness(view, src.Readiness)
	capacity.AttachHealth(view, src.Health)
	c.JSON(http.StatusOK, view)
}

// capacityState is the capacity JSON: the validated admission view plus, for capacity tiers, each
// member's cached telemetry, read with the pressure cache's Peek (never scheduling a scrape).
func (s *Server) capacityState(c *gin.Context) {
	g := s.current()
	c.JSON(http.StatusOK, capacity.Read(g.plan, g.sources))
}

// tierState renders one admission snapshot for the admin API: IDs, states, reasons and counts only.
func tierState(sn admission.Snapshot) manage.Tier {
	t := manage.Tier{ID: sn.ID, Kind: sn.Kind.String(), State: sn.State, Reason: sn.Reason,
		Draining: sn.Draining, Active: sn.Active, MaxConcurrency: sn.MaxConcurrency,
		Released: sn.Released, ReleaseMisuse: sn.ReleaseMisuse}
	if sn.Kind == admission.KindReplica {
		t.Strategy = sn.Strategy.String()
	}
	for _, m := range sn.Members {
		if m.Retiring {
			continue // the transition answer shows the configured members
		}
		t.Members = append(t.Members, manage.Member{ID: m.ID, State: m.State, Reason: m.Reason,
			Draining: m.Draining, Active: m.Active, MaxConcurrency: m.MaxConcurrency})
	}
	return t
}

func (s *Server) now() time.Time { return s.clock() }
