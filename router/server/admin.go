package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/readiness"
)

// defaultQuiesceReason is the reason of a quiesce that names none.
const defaultQuiesceReason = "operator"

// Refusals of a well-formed transition, checked against live state. The grammar's own refusals are
// manage's Problems.
var (
	errUnknownTier        = apiError{http.StatusNotFound, "unknown tier", "invalid_request_error", "unknown_tier"}
	errUnknownMember      = apiError{http.StatusNotFound, "unknown member", "invalid_request_error", "unknown_member"}
	errWrongKind          = apiError{http.StatusBadRequest, "members are addressable only on replica tiers", "invalid_request_error", "wrong_tier_kind"}
	errNotQuiesced        = apiError{http.StatusConflict, "drain requires its scope to be quiesced first", "invalid_request_error", "not_quiesced"}
	errDrainAborted       = apiError{http.StatusConflict, "the scope was readmitted while the drain waited", "invalid_request_error", "drain_aborted"}
	errNotReady           = apiError{http.StatusConflict, "member is not ready; it stays quiesced", "invalid_request_error", "member_not_ready"}
	errDrainTimeout       = apiError{http.StatusGatewayTimeout, "drain did not finish in time; in-flight requests continue", "timeout_error", "drain_timeout"}
	errIntentNotPersisted = apiError{http.StatusInternalServerError, "the transition took effect but its intent could not be saved; it will not survive a restart", "server_error", "intent_not_persisted"}
)

// transition is POST /admin/v1/transition. The body is decoded strictly by manage.Decode and the
// request checked against live state (tier, member, kind, quiesce) before anything changes; a dry
// run stops there and reports what would change. Every call, refused or not, writes one audit line.
func (s *Server) transition(c *gin.Context) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, manage.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.refuseTransition(c, manage.Request{}, problem(manage.ErrBodyTooLarge), nil)
		} else {
			s.refuseTransition(c, manage.Request{}, errUnreadable, nil)
		}
		return
	}
	req, err := manage.Decode(body)
	if err != nil {
		var p *manage.Problem
		if !errors.As(err, &p) {
			p = manage.ErrNotObject
		}
		s.refuseTransition(c, manage.Request{}, problem(p), nil) // nothing unvalidated reaches the log
		return
	}
	if readOnlyRefused(c, req) {
		s.refuseTransition(c, req, errReadOnly, nil) // an observer token asks status only
		return
	}
	resp, refusal, active := s.runTransition(c.Request.Context(), req)
	if refusal != nil {
		s.refuseTransition(c, req, *refusal, active)
		return
	}
	s.audit(c, req, resp.Result, "")
	c.JSON(http.StatusOK, resp)
}

func problem(p *manage.Problem) apiError {
	return apiError{p.Status, p.Message, "invalid_request_error", p.Code}
}

func (s *Server) refuseTransition(c *gin.Context, req manage.Request, e apiError, active *int64) {
	s.audit(c, req, "refused", e.code)
	if active != nil {
		abortWith(c, e, active)
		return
	}
	abort(c, e)
}

// audit writes the transition's one log line: validated fields only, never the token or the body.
func (s *Server) audit(c *gin.Context, req manage.Request, result, code string) {
	s.log.Info("transition", "request_id", requestID(c), "action", req.Action, "tier", req.Tier,
		"member_id", req.MemberID, "reason", req.Reason, "dry_run", req.DryRun, "result", result, "code", code)
}

// runTransition checks a valid request against live state, then applies it (unless it is a dry
// run). A refusal comes back with nothing changed, except intent_not_persisted: the transition
// stands in memory and only its persistence failed.
func (s *Server) runTransition(ctx context.Context, req manage.Request) (manage.Response, *apiError, *int64) {
	t, ok := s.current().router.Admission().Tier(req.Tier)
	if !ok {
		resp, refusal := s.keptTransition(req, errUnknownTier)
		return resp, refusal, nil
	}
	member := req.MemberID
	if member != "" {
		if t.Kind() != admission.KindReplica {
			resp, refusal := s.keptTransition(req, errWrongKind)
			return resp, refusal, nil
		}
		if !hasMember(t, member) {
			resp, refusal := s.keptTransition(req, errUnknownMember)
			return resp, refusal, nil
		}
	}
	resp := manage.Response{Action: req.Action, Tier: req.Tier, MemberID: member, DryRun: req.DryRun}
	cur := scopeOf(tierState(t.Snapshot()), member)
	var refusal *apiError
	var active *int64
	switch req.Action {
	case manage.ActionStatus:
		resp.Result, resp.Scope = manage.ResultStatus, cur
	case manage.ActionQuiesce:
		reason := req.Reason
		if reason == "" {
			reason = defaultQuiesceReason
		}
		after := manage.Scope{State: admission.StateQuiesced, Reason: reason, Active: cur.Active, Draining: cur.Active > 0}
		resp.Result, resp.Scope, refusal = s.setScope(cur, after, req.DryRun, func() error {
			if member != "" {
				return t.QuiesceMember(member, reason)
			}
			return t.Quiesce(reason)
		})
	case manage.ActionReadmit:
		after := manage.Scope{State: admission.StateAdmitting, Active: cur.Active}
		resp.Result, resp.Scope, refusal = s.setScope(cur, after, req.DryRun, func() error {
			if member == "" {
				return t.Readmit() // never clears member quiesce
			}
			// Member readmission verifies that member's served-model readiness, and only that
			// member's; it never readmits the tier.
			if v, err := s.prober.ProbeMember(ctx, t.ID(), member); err != nil || v != readiness.Ready {
				return errMemberNotReady
			}
			return t.ReadmitMember(member)
		})
	case manage.ActionDrain:
		resp.Result, refusal, active = s.drainScope(ctx, t, member, cur, req)
	}
	if refusal != nil {
		return manage.Response{}, refusal, active
	}
	resp.Snapshot = tierState(t.Snapshot())
	if !req.DryRun || req.Action == manage.ActionStatus || req.Action == manage.ActionDrain {
		resp.Scope = scopeOf(resp.Snapshot, member) // as it stands now
	}
	resp.Retained = s.retained(req.Tier) // members no longer configured whose intent is kept
	return resp, nil, nil
}

// errMemberNotReady refuses a member readmission whose readiness probe failed.
var errMemberNotReady = errors.New("member not ready")

// setScope moves a scope from cur to after with apply: unchanged when it is already there, a
// report of the change for a dry run. A real change is persisted; a failed save is reported while
// the change stands.
func (s *Server) setScope(cur, after manage.Scope, dryRun bool, apply func() error) (string, manage.Scope, *apiError) {
	if cur.State == after.State && cur.Reason == after.Reason {
		return manage.ResultUnchanged, cur, nil
	}
	if dryRun {
		return manage.ResultWouldChange, after, nil
	}
	if err := apply(); err != nil {
		if errors.Is(err, errMemberNotReady) {
			return "", cur, fixed(errNotReady)
		}
		return "", cur, fixed(errInternal)
	}
	if err := s.saveIntent(); err != nil {
		return manage.ResultChanged, after, fixed(errIntentNotPersisted)
	}
	return manage.ResultChanged, after, nil
}

// drainScope answers a drain: the scope must be quiesced; a dry run reports whether it would wait;
// otherwise it waits (cancelling nothing) up to the request's wait and answers 504 with the
// scope's remaining active requests when the wait passes.
func (s *Server) drainScope(ctx context.Context, t *admission.TierAdmission, member string, cur manage.Scope, req manage.Request) (string, *apiError, *int64) {
	if cur.State != admission.StateQuiesced {
		return "", fixed(errNotQuiesced), nil
	}
	if req.DryRun {
		if cur.Active == 0 {
			return manage.ResultDrained, nil, nil
		}
		return manage.ResultWouldWait, nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(req.Wait())*time.Second)
	defer cancel()
	switch err := drain(ctx, t, member); {
	case err == nil:
		return manage.ResultDrained, nil, nil
	case errors.Is(err, errReadmitted):
		return "", fixed(errDrainAborted), nil
	case errors.Is(err, admission.ErrNotQuiesced):
		return "", fixed(errNotQuiesced), nil
	case errors.Is(err, admission.ErrUnknownMember):
		return "", fixed(errUnknownMember), nil // a reload removed the member while the drain waited
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		left := scopeOf(tierState(t.Snapshot()), member).Active
		return "", fixed(errDrainTimeout), &left
	}
	return "", fixed(errInternal), nil
}

// saveIntent persists admission's quiesce state, with the intent kept for scopes not configured
// (kept.go), when an intent file is configured. The snapshot is
// read under the store's lock, so the file never ends older than admission.
func (s *Server) saveIntent() error {
	if s.intent == nil {
		return nil
	}
	err := s.intent.Save(s.intentDocument)
	if err != nil {
		s.log.Error("intent not saved", "error", err)
	}
	return err
}

func hasMember(t *admission.TierAdmission, member string) bool {
	for _, id := range t.Members() {
		if id == member {
			return true
		}
	}
	return false
}

// scopeOf projects the tier (member "") or one member out of a tier snapshot.
func scopeOf(tier manage.Tier, member string) manage.Scope {
	if member == "" {
		return manage.Scope{State: tier.State, Reason: tier.Reason, Active: tier.Active, Draining: tier.Draining}
	}
	for _, m := range tier.Members {
		if m.ID == member {
			return manage.Scope{State: m.State, Reason: m.Reason, Active: m.Active, Draining: m.Draining}
		}
	}
	return manage.Scope{}
}

// errDecisionFormat refuses a decisions format other than the two there are.
var errDecisionFormat = apiError{http.StatusBadRequest, "format must be lines or json", "invalid_request_error", "invalid_format"}

// recentDecisions is GET /admin/v1/decisions?n=N[&format=lines|json]: the n most recent records of
// the ring (default 100), oldest first, as formatted lines (the default) or as the canonical JSON
// objects of the JSONL sink (format=json; the status page reads these).
func (s *Server) recentDecisions(c *gin.Context) {
	format := c.DefaultQuery("format", "lines")
	if format != "lines" && format != "json" {
		abort(c, errDecisionFormat)
		return
	}
	n, err := strconv.Atoi(c.DefaultQuery("n", "100"))
	if err != nil || n < 1 {
		n = 100
	}
	recs := s.decisions.Recent(n)
	if format == "json" {
		out := make([]json.RawMessage, 0, len(recs))
		for _, r := range recs {
			if b, err := r.JSON(); err == nil { // stored records are normalized: this cannot fail
				out = append(out, b)
			}
		}
		c.JSON(http.StatusOK, out)
		return
	}
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Line())
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) decisionSummary(c *gin.Context) {
	c.JSON(http.StatusOK, decisionlog.Summarize(s.decisions.Recent(1<<30)))
}

// fixed returns a copy of a fixed refusal to hand up the call chain.
func fixed(e apiError) *apiError { return &e }
