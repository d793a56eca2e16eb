package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestVerdict(t *testing.T) {
	for name, tc := range map[string]struct {
		r    Report
		want string
	}{
		"passed":   {Report{Passed: true, Gates: []GateResult{{Name: "a", Status: GatePass}, {Name: "b", Status: GateSkip}}}, "PASS (2 gates)"},
		"no gates": {Report{Passed: true}, "PASS (0 gates)"},
		"failed": {Report{Gates: []GateResult{{Name: "p99 ttft", Status: GateFail}, {Name: "ok", Status: GatePass},
			{Name: "spread", Status: GateFail}}}, "FAIL: p99 ttft; spread"},
	} {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, tc.r.Verdict()) })
	}
}
