package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type policyJSON struct {
	Policies []struct {
		Policy            string  `json:"policy"`
		GoodputRPS        float64 `json:"goodput_rps"`
		GoodputVsCapacity float64 `json:"goodput_vs_capacity"`
		GoodputVsOracle   float64 `json:"goodput_vs_oracle"`
		CeilingViolations uint64  `json:"ceiling_violations"`
		Mismatches        uint64  `json:"mismatches"`
		E2E               struct {
			P50 float64 `json:"p50"`
			P99 float64 `json:"p99"`
		} `json:"e2e_s"`
	} `json:"policies"`
}

type runJSON struct {
	Runs []struct {
		Strategy string `json:"strategy"`
		Tier     struct {
			GoodputRPS float64 `json:"goodput_rps"`
			E2E        struct {
				P50 float64 `json:"p50"`
				P99 float64 `json:"p99"`
			} `json:"e2e_s"`
		} `json:"tier"`
	} `json:"runs"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v))
}

// compare --policies all runs every policy over the shared walk; its capacity row is the capacity
// run of anvil-sim run, figure for figure.
func TestComparePoliciesCapacityRowIsTheRun(t *testing.T) {
	dir := t.TempDir()
	pj, rj := filepath.Join(dir, "p.json"), filepath.Join(dir, "r.json")
	code, out, errOut := runCLI(t, "compare", "failing-member", "--policies", "all", "--no-progress",
		"--json", pj, "--markdown", filepath.Join(dir, "p.md"), "--plots", dir)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "anvil-sim policies: failing-member")
	code, _, errOut = runCLI(t, "run", "failing-member", "--no-progress", "--json", rj)
	require.Equal(t, 0, code, errOut)
	var p policyJSON
	var r runJSON
	readJSON(t, pj, &p)
	readJSON(t, rj, &r)
	require.Len(t, p.Policies, 7)
	assert.Equal(t, "capacity", p.Policies[0].Policy)
	assert.Equal(t, "oracle", p.Policies[6].Policy)
	var found bool
	for _, run := range r.Runs {
		if run.Strategy == "capacity" {
			found = true
			assert.Equal(t, run.Tier.GoodputRPS, p.Policies[0].GoodputRPS)
			assert.Equal(t, run.Tier.E2E, p.Policies[0].E2E)
		}
	}
	require.True(t, found)
	for _, row := range p.Policies {
		assert.Zero(t, row.CeilingViolations+row.Mismatches, row.Policy)
	}
	assert.Equal(t, 1.0, p.Policies[0].GoodputVsCapacity)
	assert.Equal(t, 1.0, p.Policies[6].GoodputVsOracle)
	for _, f := range []string{"failing-member-policies-e2e-cdf.png", "failing-member-policies-ttft-cdf.svg"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
}

// Same seed, same bytes: two comparisons of the same scenario write identical JSON and Markdown;
// another seed does not.
func TestComparePoliciesIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	files := func(tag string, seed string) (string, string) {
		j, m := filepath.Join(dir, tag+".json"), filepath.Join(dir, tag+".md")
		code, _, errOut := runCLI(t, "compare", "heterogeneous", "--duration", "60s", "--policies", "all",
			"--no-progress", "--seed", seed, "--json", j, "--markdown", m)
		require.Equal(t, 0, code, errOut)
		jb, err := os.ReadFile(j)
		require.NoError(t, err)
		mb, err := os.ReadFile(m)
		require.NoError(t, err)
		return string(jb), string(mb)
	}
	j1, m1 := files("a", "5")
	j2, m2 := files("b", "5")
	j3, _ := files("c", "6")
	assert.Equal(t, j1, j2)
	assert.Equal(t, m1, m2)
	assert.NotEqual(t, j1, j3)
}

func TestComparePoliciesRefusesBadLists(t *testing.T) {
	for _, args := range [][]string{
		{"compare", "heterogeneous", "--policies", "capacity,bogus"},
		{"compare", "heterogeneous", "--policies", "random,random"},
		{"compare", "heterogeneous", "--policies", "all", "--strategies", "round_robin,capacity"},
	} {
		code, _, errOut := runCLI(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
}
