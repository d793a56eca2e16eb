package server

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/capacity"
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
		target, err := at.Admit(tier)
		if err != nil {
			s.metrics.refused(tier.ID, err)
			abort(c, admissionError(err))
			return
		}
		at.Dispatched()
		res := s.relay.Do(c.Request.Context(), c.Writer, relay.Upstream{
			BaseURL: target.BaseURL, Path: ep.Path(), Body: body, Stream: req.Stream,
			RequestID: requestID(c), APIKey: tier.APIKey.Reveal(),
		})
		at.Relayed(res.Outcome, res.Status, res.FirstByte)
		c.Abort() // the relay wrote the response
	}
}

// finish ends the walk, counts the request in the metrics from its record and writes one access-log
// line. None of them carries bodies, prompts, URLs or credentials: the record's fields are IDs, enums
// and numbers.
//
// It is the handler's one deferred call, so it also sees a panic: the walk records it (internal_error
// after admission, with its attempt and selection), the lease is released once, and the panic goes on
// to recoverPanics, which answers the fixed 500 when nothing was written yet and aborts the
// connection otherwise. The recorded status is the one the caller gets.
func (s *Server) finish(c *gin.Context, at *routing.Attempt) {
	p := recover()
	status := c.Writer.Status()
	if p != nil {
		at.Panicked()
		if !c.Writer.Written() {
			status = errInternal.status
		}
	}
	rec, err := at.Finish(s.now(), status)
	s.metrics.finished(rec)
	if err != nil {
		s.log.Warn("decision record refused", "request_id", rec.RequestID, "error", err)
	}
	s.log.Info("request",
		"request_id", rec.RequestID, "path", c.FullPath(), "status", rec.Status,
		"alias", rec.Alias, "tier", rec.Tier, "member", rec.Member,
		"outcome", string(rec.Outcome), "attempts", rec.Attempts,
		"duration_ms", rec.Duration.Milliseconds())
	if p != nil {
		panic(p) // recoverPanics answers it
	}
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

// admissionState is the admin view of every tier's admission snapshot. Member reasons stay off it.
func (s *Server) admissionState(c *gin.Context) {
	c.JSON(http.StatusOK, capacity.AdmissionView(s.sources.Admission.Snapshots()))
}

// capacityState is the capacity JSON: the validated admission view plus, for capacity tiers, each
// member's cached telemetry, read with the pressure cache's Peek (never scheduling a scrape).
func (s *Server) capacityState(c *gin.Context) {
	c.JSON(http.StatusOK, capacity.Build(s.plan, s.sources.Admission.Snapshots(), s.sources.Pressure))
}

func (s *Server) now() time.Time { return time.Now() }
