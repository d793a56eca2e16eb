package report

import (
	"fmt"
	"strings"
)

// Verdict is the report's one-line gate verdict: "PASS (N gates)", or "FAIL: " and the failed
// gates' names in file order.
func (r *Report) Verdict() string {
	if r.Passed {
		return fmt.Sprintf("PASS (%d gates)", len(r.Gates))
	}
	var failed []string
	for _, g := range r.Gates {
		if g.Status == GateFail {
			failed = append(failed, g.Name)
		}
	}
	return fmt.Sprintf("FAIL: %s", strings.Join(failed, "; "))
}
