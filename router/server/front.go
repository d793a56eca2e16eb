package server

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/manage"
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
			abort(c, admissionError(err))
			return
		}
		res := s.relay.Do(c.Request.Context(), c.Writer, relay.Upstream{
			BaseURL: target.BaseURL, Path: ep.Path(), Body: body, Stream: req.Stream,
			RequestID: requestID(c), APIKey: tier.APIKey.Reveal(),
		})
		at.Relayed(res.Outcome, res.Status, res.FirstByte)
		c.Abort() // the relay wrote the response
	}
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

// readyz answers 200 once the first readiness round has completed and every replica tier can
// admit: the tier is not quiesced and at least one member is both probed ready and not quiesced.
// A quiesced replica tier (or one whose every ready member is quiesced) is a host under
// maintenance, so the balancer in front stops sending to it. The body says per tier how many
// members are ready and how many of those admit.
func (s *Server) readyz(c *gin.Context) {
	type tierReady struct {
		Tier      string `json:"tier"`
		State     string `json:"state"`
		Ready     int    `json:"ready"`
		Admitting int    `json:"admitting"`
		Members   int    `json:"members"`
	}
	out := struct {
		Ready bool        `json:"ready"`
		Tiers []tierReady `json:"tiers"`
	}{Ready: s.probed.Load(), Tiers: []tierReady{}}
	for _, t := range s.cfg.Tiers() {
		if t.Kind != config.KindReplica {
			continue
		}
		adm, _ := s.router.Admission().Tier(t.ID)
		snap := adm.Snapshot()
		quiesced := map[string]bool{}
		for _, m := range snap.Members {
			quiesced[m.ID] = m.State == admission.StateQuiesced
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
		if tr.Admitting == 0 || snap.State != admission.StateAdmitting {
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
	c.JSON(http.StatusOK, snapshotsJSON(s.router.Admission().Snapshots()))
}

func snapshotsJSON(snaps []admission.Snapshot) []manage.Tier {
	out := make([]manage.Tier, 0, len(snaps))
	for _, sn := range snaps {
		out = append(out, tierState(sn))
	}
	return out
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
		t.Members = append(t.Members, manage.Member{ID: m.ID, State: m.State, Reason: m.Reason,
			Draining: m.Draining, Active: m.Active, MaxConcurrency: m.MaxConcurrency})
	}
	return t
}

func (s *Server) now() time.Time { return time.Now() }
