package qualification

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/anvil-llm/anvil/router/manage"
)

// Admission states, as the router names them.
const (
	stateAdmitting = "admitting"
	stateQuiesced  = "quiesced"
)

// preflight reads, and changes nothing: every member's served identities, health and version; the
// router's readiness, capacity, admission, decision summary and the tier's transition status. It
// fails when any member's identity is not exactly the served model, the declared provenance does
// not hold, the router's view of the tier differs from the declaration, a member is not ready, or
// anything is quiesced, draining or busy.
func (r *runner) preflight(ctx context.Context, rep *PhaseReport) {
	r.observeMembers(ctx, rep)
	if rt, err := r.readyz(ctx); err != nil {
		rep.check("router readiness read", false, "%v", err)
	} else {
		n := len(r.p.Tier.Members)
		rep.check("router: every member probed ready and admitting", rt.Ready == n && rt.Admitting == n && rt.State == stateAdmitting,
			"the router's /readyz shows %d of %d members ready, %d admitting, tier %s", rt.Ready, rt.Members, rt.Admitting, shown(rt.State))
	}
	tier, _ := r.snapshot(ctx, rep, "before")
	if tier != nil {
		r.compareCapacity(rep, *tier)
	}
	st, err := r.router.status(ctx)
	if err != nil {
		rep.check("tier status (router/manage)", false, "%v", err)
		return
	}
	r.recordJSON(rep, "router/status-before.json", st)
	r.before = &st
	quiesced := []string{}
	if st.Snapshot.State != stateAdmitting {
		quiesced = append(quiesced, "tier "+st.Tier)
	}
	for _, m := range st.Snapshot.Members {
		if m.State != stateAdmitting {
			quiesced = append(quiesced, "member "+m.ID)
		}
	}
	rep.check("nothing quiesced unexpectedly", len(quiesced) == 0, "quiesced: %s", orNone(quiesced))
}

func (r *runner) readyz(ctx context.Context) (tierReadiness, error) {
	_, t, err := r.router.readyz(ctx)
	return t, err
}

// observeMembers asks every member for its identity and labels the run's evidence by what the
// members said about themselves, never by what the file declares.
func (r *runner) observeMembers(ctx context.Context, rep *PhaseReport) {
	prov := r.p.Tier.Provenance
	fake, answered := false, 0
	for _, m := range r.p.Tier.Members {
		o := r.web.observeMember(ctx, m, r.p.Tier.ServedModel, r.o.Secrets.Member)
		rep.Members = append(rep.Members, o)
		fake = fake || o.Fake
		if o.ListedModels > 0 || o.ExactIdentity {
			answered++
		}
		rep.check("member "+m.ID+": served identity", o.ExactIdentity,
			"/v1/models lists %d model(s) [%s]; the tier requires exactly %s%s", o.ListedModels, strings.Join(o.Models, ", "),
			r.p.Tier.ServedModel, errorsNote(o.Errors))
		rep.check("member "+m.ID+": health", o.HealthStatus == http.StatusOK, "/health answered %s", statusText(o.HealthStatus))
		if prov.EngineVersion != "" {
			rep.check("member "+m.ID+": declared engine version", o.EngineVersion == prov.EngineVersion,
				"/version reports %s; declared %s", dash(o.EngineVersion), prov.EngineVersion)
		}
		if prov.MaxModelLen != 0 {
			got := "none"
			if o.MaxModelLen != nil {
				got = fmt.Sprint(*o.MaxModelLen)
			}
			rep.check("member "+m.ID+": declared max_model_len", o.MaxModelLen != nil && *o.MaxModelLen == prov.MaxModelLen,
				"/v1/models reports %s; declared %d", got, prov.MaxModelLen)
		}
	}
	switch {
	case fake:
		r.evidence = EvidenceSynthetic
		rep.Note = "A member answered as the fake vLLM: this run is synthetic, whatever the file declares."
	case answered == len(r.p.Tier.Members):
		r.evidence = EvidenceReal
	default:
		r.evidence = EvidenceUndetermined
	}
}

// compareCapacity checks the router's capacity view of the tier against the declaration: a
// replica tier of the declared strategy, exactly the declared members with their ceilings, the
// effective tier ceiling, everything admitting and nothing in flight (the tier must carry no other
// traffic during a qualification).
func (r *runner) compareCapacity(rep *PhaseReport, t manage.Tier) {
	d := r.p.Tier
	rep.check("router: tier kind and strategy", t.Kind == "replica" && t.Strategy == d.Strategy,
		"the router serves tier %s as %s, strategy %s; declared replica, %s", d.ID, shown(t.Kind), dash(shown(t.Strategy)), d.Strategy)
	var want, got []string
	for _, m := range d.Members {
		want = append(want, fmt.Sprintf("%s(ceiling %d)", m.ID, m.MaxConcurrency))
	}
	for _, m := range t.Members {
		got = append(got, fmt.Sprintf("%s(ceiling %d)", shown(m.ID), m.MaxConcurrency))
	}
	slices.Sort(want)
	slices.Sort(got)
	rep.check("router: members and ceilings as declared", slices.Equal(want, got),
		"the router holds [%s]; declared [%s]", strings.Join(got, ", "), strings.Join(want, ", "))
	rep.check("router: tier ceiling as declared", t.MaxConcurrency == d.Ceiling,
		"the router enforces %d; the declaration implies %d", t.MaxConcurrency, d.Ceiling)
	busy := t.Active
	draining := t.Draining
	for _, m := range t.Members {
		busy += m.Active
		draining = draining || m.Draining
	}
	rep.check("router: tier idle before the run", t.Active == 0 && busy == 0 && !draining,
		"%d request(s) in flight on the tier (the tier must carry no other traffic during a qualification); draining %t", t.Active, draining)
}

func errorsNote(errs []string) string {
	if len(errs) == 0 {
		return ""
	}
	return " (" + strings.Join(errs, "; ") + ")"
}

func statusText(code int) string {
	if code == 0 {
		return "nothing"
	}
	return fmt.Sprintf("HTTP %d", code)
}
