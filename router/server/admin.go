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
	"github.com/anvil-llm/anvil/router/capacity"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/readiness"
)

// maxDrainWait bounds how long one drain call may hold an admin request open.
const maxDrainWait = time.Hour

// TransitionRequest is the body of POST /admin/v1/transition. Member is optional: omitted, the action
// applies to the whole tier.
type TransitionRequest struct {
	Action      string `json:"action"` // status | quiesce | drain | readmit
	Tier        string `json:"tier"`
	Member      string `json:"member,omitempty"`
	Reason      string `json:"reason,omitempty"`       // quiesce only; default "operator"
	WaitSeconds int    `json:"wait_seconds,omitempty"` // drain only; 0 = up to maxDrainWait
}

var (
	errBadTransition = apiError{http.StatusBadRequest, "transition body must be a JSON object with action and tier", "invalid_request_error", "invalid_transition"}
	errBadAction     = apiError{http.StatusBadRequest, "action must be status, quiesce, drain or readmit", "invalid_request_error", "invalid_action"}
	errBadReason     = apiError{http.StatusBadRequest, "reason must be a lowercase code of 1-64 characters", "invalid_request_error", "invalid_reason"}
	errUnknownTier   = apiError{http.StatusNotFound, "unknown tier", "invalid_request_error", "unknown_tier"}
	errUnknownMember = apiError{http.StatusNotFound, "unknown member", "invalid_request_error", "unknown_member"}
	errWrongKind     = apiError{http.StatusBadRequest, "members are addressable only on replica tiers", "invalid_request_error", "wrong_tier_kind"}
	errNotQuiesced   = apiError{http.StatusConflict, "drain requires its scope to be quiesced first", "invalid_request_error", "not_quiesced"}
	errNotReady      = apiError{http.StatusConflict, "member is not ready; it stays quiesced", "invalid_request_error", "member_not_ready"}
	errDrainTimeout  = apiError{http.StatusGatewayTimeout, "drain did not finish in time; in-flight requests continue", "timeout_error", "drain_timeout"}
)

func (s *Server) transition(c *gin.Context) {
	var req TransitionRequest
	dec := json.NewDecoder(io.LimitReader(c.Request.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Tier == "" || req.WaitSeconds < 0 {
		abort(c, errBadTransition)
		return
	}
	tier, ok := s.router.Admission().Tier(req.Tier)
	if !ok {
		abort(c, errUnknownTier)
		return
	}
	if req.Member != "" && tier.Kind() != admission.KindReplica {
		abort(c, errWrongKind)
		return
	}
	if err := s.apply(c.Request.Context(), tier, req); err != nil {
		abort(c, transitionError(err))
		return
	}
	c.JSON(http.StatusOK, transitionAnswer(tier.Snapshot()))
}

// transitionAnswer is the tier's admission view plus its members' quiesce reasons: it reports what an
// operator just did, so unlike the status views it names the reasons.
func transitionAnswer(sn admission.Snapshot) capacity.Tier {
	t := capacity.AdmissionTier(sn)
	for i := range t.Members {
		t.Members[i].Reason = sn.Members[i].Reason
	}
	return t
}

// errMemberNotReady refuses a member readmission whose readiness probe failed.
var errMemberNotReady = errors.New("member not ready")

func (s *Server) apply(ctx context.Context, t *admission.TierAdmission, req TransitionRequest) error {
	member := req.Member != ""
	switch req.Action {
	case "status":
		if member {
			return s.knownMember(t, req.Member)
		}
		return nil
	case "quiesce":
		reason := req.Reason
		if reason == "" {
			reason = "operator"
		}
		if member {
			return t.QuiesceMember(req.Member, reason)
		}
		return t.Quiesce(reason)
	case "drain":
		wait := maxDrainWait
		if req.WaitSeconds > 0 && req.WaitSeconds < int(maxDrainWait/time.Second) {
			wait = time.Duration(req.WaitSeconds) * time.Second
		}
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		return drain(ctx, t, req.Member)
	case "readmit":
		if !member {
			return t.Readmit()
		}
		if err := s.knownMember(t, req.Member); err != nil {
			return err
		}
		// Member readmission verifies that member's served-model readiness, and only that member's.
		if v, err := s.prober.ProbeMember(ctx, t.ID(), req.Member); err != nil || v != readiness.Ready {
			return errMemberNotReady
		}
		return t.ReadmitMember(req.Member)
	}
	return errBadActionErr
}

var errBadActionErr = errors.New("bad action")

func (s *Server) knownMember(t *admission.TierAdmission, member string) error {
	for _, id := range t.Members() {
		if id == member {
			return nil
		}
	}
	return admission.ErrUnknownMember
}

func transitionError(err error) apiError {
	switch {
	case errors.Is(err, errBadActionErr):
		return errBadAction
	case errors.Is(err, admission.ErrUnknownMember):
		return errUnknownMember
	case errors.Is(err, admission.ErrWrongKind):
		return errWrongKind
	case errors.Is(err, admission.ErrInvalidReason):
		return errBadReason
	case errors.Is(err, admission.ErrNotQuiesced):
		return errNotQuiesced
	case errors.Is(err, errMemberNotReady):
		return errNotReady
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return errDrainTimeout
	}
	return errInternal
}

func (s *Server) recentDecisions(c *gin.Context) {
	n, err := strconv.Atoi(c.DefaultQuery("n", "100"))
	if err != nil || n < 1 {
		n = 100
	}
	recs := s.decisions.Recent(n)
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Line())
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) decisionSummary(c *gin.Context) {
	c.JSON(http.StatusOK, decisionlog.Summarize(s.decisions.Recent(1<<30)))
}
