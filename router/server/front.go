package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/relay"
	"github.com/anvil-llm/anvil/router/routing"
)

// proxy returns the handler of one OpenAI endpoint. The walk itself is routing's Attempt; the handler
// adds HTTP: the body, the error answers and the one relay attempt. Finish runs in the one defer, so
// the lease is released and the request recorded on every path, panics included.
func (s *Server) proxy(ep routing.Endpoint) gin.HandlerFunc {
	return func(c *gin.Context) {
		at := s.router.Begin(requestID(c), s.now())
		defer s.finish(c, &at)

		req, ok := s.parse(c, ep)
		if !ok {
			return
		}
		tier, err := at.Resolve(req)
		if err != nil {
			abort(c, requestError(err))
			return
		}
		body, err := req.Body(tier.ServedModel)
		if err != nil {
			abort(c, errInternal)
			return
		}
		target, err := s.admit(c, &at, tier)
		if errors.Is(err, context.Canceled) {
			return // the caller left while queued: nothing to answer
		}
		if err != nil {
			abort(c, admissionError(err))
			return
		}
		res := s.relay.Do(c.Request.Context(), c.Writer, relay.Upstream{
			BaseURL: target.BaseURL, Path: ep.Path(), Body: body, Stream: req.Stream,
			PassThrough: ep == routing.AudioSpeech, // audio bytes, relayed as they come
			RequestID:   requestID(c), APIKey: tier.APIKey.Reveal(),
		})
		at.Relayed(res.Outcome, res.Status, res.FirstByte)
		c.Abort() // the relay wrote the response
		if res.Cut {
			panic(http.ErrAbortHandler) // a broken byte stream must look broken, never cleanly ended
		}
	}
}

// admit asks for a lease and, when the tier has an admission queue and no capacity, waits in it: on
// the ticket's wake-ups, until the queue timeout, or until the caller leaves (context.Canceled, the
// attempt records the cancellation). The waiting lives here, in the shell; the walk only answers.
func (s *Server) admit(c *gin.Context, at *routing.Attempt, tier config.Tier) (routing.Target, error) {
	target, err := at.Admit(tier, s.now())
	for errors.Is(err, routing.ErrQueued) {
		wake, deadline := at.Wait()
		timer := time.NewTimer(deadline.Sub(s.now()))
		select {
		case <-wake:
		case <-timer.C:
		case <-c.Request.Context().Done():
			timer.Stop()
			at.Canceled(s.now())
			return routing.Target{}, context.Canceled
		}
		timer.Stop()
		target, err = at.Admit(tier, s.now())
	}
	return target, err
}

// finish ends the walk and writes one access-log line. Neither carries bodies, prompts, URLs or
// credentials: the record's fields are IDs, enums and numbers.
func (s *Server) finish(c *gin.Context, at *routing.Attempt) {
	rec, err := at.Finish(s.now(), c.Writer.Status())
	if err != nil {
		s.log.Warn("decision record refused", "request_id", rec.RequestID, "error", err)
	}
	s.log.Info("request",
		"request_id", rec.RequestID, "path", c.FullPath(), "status", rec.Status,
		"alias", rec.Alias, "tier", rec.Tier, "member", rec.Member,
		"outcome", string(rec.Outcome), "attempts", rec.Attempts,
		"duration_ms", rec.Duration.Milliseconds())
}

// parse bounds and decodes the body once.
func (s *Server) parse(c *gin.Context, ep routing.Endpoint) (routing.Request, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, s.cfg.Limits().MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			abort(c, errTooLarge)
		} else {
			abort(c, errUnreadable)
		}
		return routing.Request{}, false
	}
	req, err := routing.ParseRequest(ep, body)
	if err != nil {
		abort(c, requestError(err))
		return routing.Request{}, false
	}
	return req, true
}

// models lists the aliases, in OpenAI's shape: callers name aliases, never tiers or members.
func (s *Server) models(c *gin.Context) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	aliases := s.cfg.Aliases()
	out := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: make([]model, 0, len(aliases))}
	for _, a := range aliases {
		out.Data = append(out.Data, model{ID: a.ID, Object: "model", Created: s.started.Unix(), OwnedBy: "anvil"})
	}
	c.JSON(http.StatusOK, out)
}

// readyz answers 200 once the first readiness round has completed and every replica tier has at least
// one ready member; the body says per tier how many members are ready.
func (s *Server) readyz(c *gin.Context) {
	type tierReady struct {
		Tier    string `json:"tier"`
		Ready   int    `json:"ready"`
		Members int    `json:"members"`
	}
	out := struct {
		Ready bool        `json:"ready"`
		Tiers []tierReady `json:"tiers"`
	}{Ready: s.probed.Load(), Tiers: []tierReady{}}
	for _, t := range s.cfg.Tiers() {
		if t.Kind != config.KindReplica {
			continue
		}
		tr := tierReady{Tier: t.ID, Members: len(t.Members)}
		for _, ok := range s.prober.State().Snapshot(t.ID) {
			if ok {
				tr.Ready++
			}
		}
		if tr.Ready == 0 {
			out.Ready = false
		}
		out.Tiers = append(out.Tiers, tr)
	}
	status := http.StatusOK
	if !out.Ready {
		status = http.StatusServiceUnavailable
	}
	c.JSON(status, out)
}

// admissionState is the admin view of every tier's admission snapshot.
func (s *Server) admissionState(c *gin.Context) {
	out := snapshotsJSON(s.router.Admission().Snapshots())
	s.addReadiness(out)
	s.addHealth(out, s.now())
	c.JSON(http.StatusOK, out)
}

// healthJSON is a member's passive-health state in the admission view.
type healthJSON struct {
	State        string     `json:"state"` // healthy, ejected or half_open
	Streak       int        `json:"streak"`
	Ejections    uint64     `json:"ejections"`
	EjectedUntil *time.Time `json:"ejected_until,omitempty"`
}

// addHealth adds passive health to the members of every tier that tracks it, read after the admission
// snapshots (two reads: the view is not one instant, and says so by its two sources).
func (s *Server) addHealth(tiers []tierJSON, now time.Time) {
	for i := range tiers {
		hs, err := s.router.Health(tiers[i].ID, now)
		if err != nil {
			continue // not a replica tier, or passive health off
		}
		for j := range tiers[i].Members {
			for _, h := range hs {
				if h.ID != tiers[i].Members[j].ID {
					continue
				}
				hj := &healthJSON{State: h.State.String(), Streak: h.Streak, Ejections: h.Ejections}
				if !h.EjectedUntil.IsZero() {
					until := h.EjectedUntil.UTC().Round(time.Millisecond)
					hj.EjectedUntil = &until
				}
				tiers[i].Members[j].PassiveHealth = hj
			}
		}
	}
}

// addReadiness adds each replica member's latest completed readiness verdict: "ready", or the fixed
// reason it is out (unprobed, unreachable, unhealthy, wrong_model, extra_model, redirected).
func (s *Server) addReadiness(tiers []tierJSON) {
	for i := range tiers {
		verdicts := s.prober.State().Verdicts(tiers[i].ID)
		for j := range tiers[i].Members {
			for _, v := range verdicts {
				if v.Member == tiers[i].Members[j].ID {
					tiers[i].Members[j].Readiness = v.Verdict.String()
				}
			}
		}
	}
}

type memberJSON struct {
	ID             string      `json:"id"`
	State          string      `json:"state"`
	Reason         string      `json:"reason,omitempty"`
	Draining       bool        `json:"draining"`
	Active         int64       `json:"active_requests"`
	MaxConcurrency int64       `json:"max_concurrency"`
	Readiness      string      `json:"readiness,omitempty"` // the latest probe verdict (readiness.Verdict)
	PassiveHealth  *healthJSON `json:"passive_health,omitempty"`
}

type tierJSON struct {
	ID             string       `json:"id"`
	Kind           string       `json:"kind"`
	Strategy       string       `json:"strategy,omitempty"`
	State          string       `json:"state"`
	Reason         string       `json:"reason,omitempty"`
	Draining       bool         `json:"draining"`
	Active         int64        `json:"active_requests"`
	MaxConcurrency int64        `json:"max_concurrency"`
	Released       uint64       `json:"released"`
	ReleaseMisuse  uint64       `json:"release_misuse"`
	Queue          *queueJSON   `json:"queue,omitempty"`
	Members        []memberJSON `json:"members,omitempty"`
}

// queueJSON is a tier's admission queue in the admission view (tiers with a queue only).
type queueJSON struct {
	Waiting    int    `json:"waiting"`
	MaxWaiting int    `json:"max_waiting"`
	Full       uint64 `json:"refused_full"`
}

func snapshotsJSON(snaps []admission.Snapshot) []tierJSON {
	out := make([]tierJSON, 0, len(snaps))
	for _, sn := range snaps {
		t := tierJSON{ID: sn.ID, Kind: sn.Kind.String(), State: sn.State, Reason: sn.Reason,
			Draining: sn.Draining, Active: sn.Active, MaxConcurrency: sn.MaxConcurrency,
			Released: sn.Released, ReleaseMisuse: sn.ReleaseMisuse}
		if sn.Kind == admission.KindReplica {
			t.Strategy = sn.Strategy.String()
		}
		if sn.MaxWaiting > 0 {
			t.Queue = &queueJSON{Waiting: sn.Waiting, MaxWaiting: sn.MaxWaiting, Full: sn.QueueFull}
		}
		for _, m := range sn.Members {
			t.Members = append(t.Members, memberJSON{ID: m.ID, State: m.State, Reason: m.Reason,
				Draining: m.Draining, Active: m.Active, MaxConcurrency: m.MaxConcurrency})
		}
		out = append(out, t)
	}
	return out
}

func (s *Server) now() time.Time { return time.Now() }
