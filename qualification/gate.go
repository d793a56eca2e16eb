package qualification

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/anvil-llm/anvil/bench"
)

// Verdict results.
const (
	VerdictPass        = "pass"
	VerdictFail        = "fail"
	VerdictInterrupted = "interrupted"
)

// Promotion request statuses. The run never promotes: it writes a request a human signs, or
// says why there is nothing to sign.
const (
	PromotionReady = "ready_for_signature"
	PromotionNot   = "not_promotable"
)

// Verdict is the promotion gate's answer.
type Verdict struct {
	Result      string   `json:"result"`
	Evidence    string   `json:"evidence"`
	Promotable  bool     `json:"promotable"`
	Restored    bool     `json:"restored"`
	Fingerprint string   `json:"plan_fingerprint"`
	SLO         []Check  `json:"slo"`
	Reasons     []string `json:"reasons,omitempty"`
}

// sloChecks evaluates the targets on a routed result: the success share of measured requests and
// the p99 latencies.
func sloChecks(phase string, s SLOPlan, r *bench.Result) []Check {
	var out []Check
	share := 0.0
	if r.Requests > 0 {
		share = float64(r.Completed) / float64(r.Requests)
	}
	out = append(out, Check{Name: phase + ": success share", Passed: r.Requests > 0 && share >= s.MinSuccess,
		Detail: fmt.Sprintf("%d of %d measured requests succeeded (%.4f; target at least %.4f)", r.Completed, r.Requests, share, s.MinSuccess)})
	for _, t := range []struct {
		name   string
		target time.Duration
		got    float64
		n      int
	}{
		{"TTFT p99", s.TTFTP99, r.TTFT.P99, r.TTFT.N},
		{"TPOT p99", s.TPOTP99, r.TPOT.P99, r.TPOT.N},
		{"E2EL p99", s.E2ELP99, r.E2EL.P99, r.E2EL.N},
	} {
		if t.target == 0 {
			continue
		}
		limit := float64(t.target) / float64(time.Millisecond)
		out = append(out, Check{Name: phase + ": " + t.name, Passed: t.n > 0 && t.got <= limit,
			Detail: fmt.Sprintf("%.3f ms over %d samples (target at most %.3f ms)", t.got, t.n, limit)})
	}
	return out
}

// addedCheck is the router's added median end-to-end latency against its target.
func addedCheck(s SLOPlan, c *bench.Comparison) (Check, bool) {
	if s.MaxAddedE2ELP50 == 0 {
		return Check{}, false
	}
	limit := float64(s.MaxAddedE2ELP50) / float64(time.Millisecond)
	added := c.Routed.E2EL.P50 - c.Direct.E2EL.P50
	return Check{Name: "router's added E2EL p50", Passed: c.Routed.E2EL.N > 0 && c.Direct.E2EL.N > 0 && added <= limit,
		Detail: fmt.Sprintf("routed minus direct %.3f ms (target at most %.3f ms)", added, limit)}, true
}

// headline is the verdict in words; a pass on anything but real evidence says so in the same
// breath, so a synthetic pass never reads as a qualification.
func (v *Verdict) headline() string {
	switch {
	case v.Result == VerdictPass && v.Evidence == EvidenceSynthetic:
		return "pass on SYNTHETIC evidence (not a qualification)"
	case v.Result == VerdictPass && v.Evidence != EvidenceReal:
		return "pass on undetermined evidence (not a qualification)"
	}
	return v.Result
}

// markdown renders the verdict; withSLO adds the SLO table (the gate's report lists it as its
// checks already).
func (v *Verdict) markdown(b *bytes.Buffer, withSLO bool) {
	fmt.Fprintf(b, "## Verdict: %s\n\nEvidence %s; promotable: %t; router restored: %t; plan %s.\n\n", v.headline(), v.Evidence, v.Promotable, v.Restored, v.Fingerprint)
	if withSLO && len(v.SLO) > 0 {
		b.WriteString("| SLO | result | detail |\n|---|---|---|\n")
		for _, c := range v.SLO {
			res := "pass"
			if !c.Passed {
				res = "**FAIL**"
			}
			fmt.Fprintf(b, "| %s | %s | %s |\n", cell(c.Name), res, cell(c.Detail))
		}
		b.WriteString("\n")
	}
	for _, r := range v.Reasons {
		fmt.Fprintf(b, "- %s\n", r)
	}
	if len(v.Reasons) > 0 {
		b.WriteString("\n")
	}
}

// PromotionRequest is what the gate hands to a human. It asks; it never promotes.
type PromotionRequest struct {
	Format        string     `json:"format"`
	Status        string     `json:"status"`
	Qualification string     `json:"qualification"`
	Fingerprint   string     `json:"plan_fingerprint"`
	Tier          string     `json:"tier"`
	Alias         string     `json:"alias"`
	ServedModel   string     `json:"served_model"`
	Provenance    Provenance `json:"provenance"`
	Members       []string   `json:"members"`
	Evidence      string     `json:"evidence"`
	Verdict       Verdict    `json:"verdict"`
	Created       time.Time  `json:"created"`
}

// PromotionFormat names the promotion request's format.
const PromotionFormat = "anvil-qualify-promotion-request/1"

func promotionRequest(p *Plan, v Verdict, now time.Time) PromotionRequest {
	pr := PromotionRequest{Format: PromotionFormat, Status: PromotionNot, Qualification: p.Qualification,
		Fingerprint: p.Fingerprint(), Tier: p.Tier.ID, Alias: p.Router.Alias, ServedModel: p.Tier.ServedModel,
		Provenance: p.Tier.Provenance, Evidence: v.Evidence, Verdict: v, Created: now.UTC()}
	for _, m := range p.Tier.Members {
		pr.Members = append(pr.Members, m.ID)
	}
	if v.Promotable {
		pr.Status = PromotionReady
	}
	return pr
}

// Markdown renders the request for signing, or says why there is nothing to sign.
func (pr *PromotionRequest) Markdown(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Promotion request: %s\n\n", pr.Qualification)
	if pr.Status == PromotionReady {
		b.WriteString("Status: **ready for signature.** anvil-qualify promotes nothing; promoting this replica set is the signer's act, outside this tool.\n\n")
	} else {
		b.WriteString("Status: **NOT PROMOTABLE.** There is nothing to sign: ")
		switch {
		case pr.Evidence == EvidenceSynthetic:
			b.WriteString("the run observed fake vLLM members, so its results are synthetic.")
		case pr.Verdict.Result != VerdictPass:
			b.WriteString("the verdict is " + pr.Verdict.Result + ".")
		default:
			b.WriteString("the evidence is " + pr.Evidence + ".")
		}
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "%s\n\n", evidenceLine(pr.Evidence))
	fmt.Fprintf(&b, "| | |\n|---|---|\n| plan fingerprint | `%s` |\n| tier | `%s` (alias `%s`) |\n| served model | `%s` |\n| declared provenance | %s |\n",
		pr.Fingerprint, pr.Tier, pr.Alias, pr.ServedModel, cell(pr.Provenance.Statement))
	if pr.Provenance.EngineVersion != "" {
		fmt.Fprintf(&b, "| engine version (checked on every member) | `%s` |\n", pr.Provenance.EngineVersion)
	}
	fmt.Fprintf(&b, "| members | %s |\n| verdict | %s |\n| router restored | %t |\n\n", cell(fmt.Sprint(pr.Members)), pr.Verdict.headline(), pr.Verdict.Restored)
	pr.Verdict.markdown(&b, true)
	if pr.Status == PromotionReady {
		b.WriteString("## Signature\n\nI have read the phase reports of this run directory, checked its manifest (`anvil-qualify verify DIR`) and approve promoting the replica set above.\n\n" +
			"Name: ______________________  Date: ______________  Manifest SHA-256: ______________________\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}
