package server

import (
	"slices"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/intent"
	"github.com/anvil-llm/anvil/router/manage"
)

// Kept intent: the quiesce of a tier or member the configuration no longer has (an intent file
// entry at start, a quiesced scope a reload removed) is kept (intent.Kept, at most intent.MaxKept
// entries), saved with the live intent, shown as not configured by the transition status, applied
// again when a reload or restart brings the scope back, and cleared by a readmit of the scope.

// keepUnconfigured keeps entries that name no configured scope, logging each one kept and each one
// dropped past the bound. It reports whether it kept anything new.
func (s *Server) keepUnconfigured(entries []intent.Ignored) bool {
	if len(entries) == 0 {
		return false
	}
	dropped := s.kept.Keep(entries)
	for _, e := range entries {
		attrs := []any{"tier", e.Tier, "member_id", e.Member, "reason", e.Reason, "why", e.Why}
		if slices.Contains(dropped, e) {
			s.log.Warn("intent entry dropped: too many kept for scopes not configured", append(attrs, "max", intent.MaxKept)...)
			continue
		}
		s.log.Warn("intent entry kept for a scope not configured", attrs...)
	}
	return len(dropped) < len(entries)
}

// intentDocument is what a save writes: admission's live intent and the kept entries.
func (s *Server) intentDocument() intent.Document {
	return intent.Merge(intent.FromSnapshots(s.current().router.Admission().Snapshots()), s.kept.Document())
}

// carryIntent runs inside a reload, after the next generation's admission is committed and before
// that generation serves: it keeps the live intent (before: read just before the commit) of scopes
// the reload removed and quiesces again the kept scopes it brings back. It reports whether the
// kept entries changed, so that the reload saves the file.
func (s *Server) carryIntent(before intent.Document, set *admission.Set) bool {
	changed := s.keepUnconfigured(intent.Unconfigured(set, before))
	restored, err := s.kept.Reapply(set)
	if err != nil {
		s.log.Error("kept intent not applied", "error", err) // valid entries on configured scopes: a bug
		return changed
	}
	if restored.Tiers+restored.Members > 0 {
		s.log.Info("kept intent applied to scopes configured again", "tiers", restored.Tiers, "members", restored.Members)
		changed = true
	}
	return changed
}

// retained lists a tier's kept entries as the transition answer carries them: the tier's own
// first, then its members' in ID order.
func (s *Server) retained(tier string) []manage.Retained {
	var out []manage.Retained
	if r, ok := s.kept.Reason(tier, ""); ok {
		out = append(out, manage.Retained{Reason: r})
	}
	ms := s.kept.Members(tier)
	for _, m := range sortedIDs(ms) {
		out = append(out, manage.Retained{MemberID: m, Reason: ms[m]})
	}
	return out
}

// keptTiers lists, in ID order, the tiers the configuration in force does not have and the kept
// intent names (their own entry or their members'): GET /admin/v1/config's kept_tiers.
func (s *Server) keptTiers() []string {
	doc := s.kept.Document()
	set := s.current().router.Admission()
	var out []string
	for _, id := range sortedIDs(doc.Tiers) {
		if _, ok := set.Tier(id); !ok {
			out = append(out, id)
		}
	}
	for id := range doc.Members {
		if _, ok := set.Tier(id); !ok && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func sortedIDs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// keptTransition answers a transition on a scope the configuration does not have: status shows it
// (quiesced while its intent is kept), readmit clears the kept entry and saves; everything else,
// and a scope with nothing kept, is refused with notFound as before.
func (s *Server) keptTransition(req manage.Request, notFound apiError) (manage.Response, *apiError) {
	reason, kept := s.kept.Reason(req.Tier, req.MemberID)
	retained := s.retained(req.Tier)
	if !kept && (req.MemberID != "" || len(retained) == 0) ||
		req.Action != manage.ActionStatus && req.Action != manage.ActionReadmit {
		return manage.Response{}, fixed(notFound)
	}
	resp := manage.Response{Action: req.Action, Tier: req.Tier, MemberID: req.MemberID, DryRun: req.DryRun,
		Scope: manage.Scope{State: manage.StateNotConfigured, NotConfigured: true}}
	cleared := resp.Scope
	if kept {
		resp.Scope = manage.Scope{State: admission.StateQuiesced, Reason: reason, NotConfigured: true}
	}
	var refusal *apiError
	switch {
	case req.Action == manage.ActionStatus:
		resp.Result = manage.ResultStatus
	case !kept:
		resp.Result = manage.ResultUnchanged
	case req.DryRun:
		resp.Result, resp.Scope = manage.ResultWouldChange, cleared
	default:
		s.kept.Clear(req.Tier, req.MemberID)
		resp.Result, resp.Scope = manage.ResultChanged, cleared
		if err := s.saveIntent(); err != nil {
			refusal = fixed(errIntentNotPersisted)
		}
	}
	if refusal != nil {
		return manage.Response{}, refusal
	}
	resp.Snapshot = manage.Tier{ID: req.Tier, Kind: manage.KindNotConfigured, State: manage.StateNotConfigured}
	if t, ok := s.current().router.Admission().Tier(req.Tier); ok {
		resp.Snapshot = tierState(t.Snapshot())
	}
	resp.Retained = s.retained(req.Tier)
	return resp, nil
}
