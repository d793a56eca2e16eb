package report

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/scenarios"
)

func TestNamesAreTheReportsVocabulary(t *testing.T) {
	sc := lookup(t, "twenty-concurrent")
	names := Names(sc)
	assert.True(t, slices.IsSorted(names))
	assert.Equal(t, len(names), len(slices.Compact(slices.Clone(names))), "unique")
	for _, n := range []string{"tier.ceiling_violations", "e2e.p99", "member.vllm-0.share", "member.vllm-1.received",
		"drains.in_flight_failed", "tier.dispatch_mismatches", "queue.mean"} {
		assert.Contains(t, names, n)
	}
	r := build(t, sc)
	var built []string
	for _, m := range r.Runs[0].Metrics {
		built = append(built, m.Name)
	}
	assert.Equal(t, built, names, "exactly what a real report carries")
}

func TestCheckGates(t *testing.T) {
	for _, n := range scenarios.Names() {
		require.NoError(t, CheckGates(lookup(t, n)), n)
	}
	sc := lookup(t, "rotation")
	sc.Expect = append(sc.Expect, scenarios.Gate{Metric: "member.vllm-z.share", Run: "capacity", Op: "<", Value: 1})
	err := CheckGates(sc)
	require.ErrorIs(t, err, scenarios.ErrInvalid)
	var e *scenarios.Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, fmt.Sprintf("expect[%d].metric", len(sc.Expect)-1), e.Path)
}
