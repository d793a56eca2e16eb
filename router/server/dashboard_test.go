package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var dashboardFile = filepath.Join("..", "..", "docs", "grafana", "anvil-router.json")

// grafanaDashboard is the part of the dashboard JSON the test reads.
type grafanaDashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr         string `json:"expr"`
			LegendFormat string `json:"legendFormat"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// scrapeLabels are the labels Prometheus adds to every series it scrapes.
var scrapeLabels = []string{"instance", "job"}

// familyLabels returns the label names of the served series metric names (a histogram through its
// _bucket, _sum and _count, le on _bucket), and whether the router serves it.
func familyLabels(mfs map[string]*dto.MetricFamily, metric string) ([]string, bool) {
	name, extra := metric, []string(nil)
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(metric, suffix); ok && mfs[b].GetType() == dto.MetricType_HISTOGRAM {
			name = b
			if suffix == "_bucket" {
				extra = []string{"le"}
			}
		}
	}
	mf, ok := mfs[name]
	if !ok || len(mf.GetMetric()) == 0 {
		return nil, false
	}
	labels := append(slices.Clone(scrapeLabels), extra...)
	for _, l := range mf.GetMetric()[0].GetLabel() {
		labels = append(labels, l.GetName())
	}
	return labels, true
}

func loadDashboard(t *testing.T) (grafanaDashboard, string) {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var dash grafanaDashboard
	require.NoError(t, json.Unmarshal(raw, &dash))
	require.NotEmpty(t, dash.Title)
	return dash, string(raw)
}

// TestDashboardQueriesMatchTheExposition: every query of the Grafana dashboard parses, names only
// series the router serves (checked against a real router's page under traffic), matches and groups
// by labels those series have, keeps hosts apart (an instance and a job matcher on every selector,
// instance in every by clause and every legend), and the tier list comes from a series every tier
// has.
func TestDashboardQueriesMatchTheExposition(t *testing.T) {
	dash, raw := loadDashboard(t)
	mfs := exportedFamilies(t)
	used := map[string]bool{}
	check := func(where, expr string) promQuery {
		t.Helper()
		q, err := parsePromQL(expr)
		require.NoError(t, err, "%s: %s", where, expr)
		require.NotEmpty(t, q.selectors, "%s names no series: %s", where, expr)
		for _, s := range q.selectors {
			labels, ok := familyLabels(mfs, s.metric)
			if !assert.True(t, ok, "%s uses %s, which the router does not serve", where, s.metric) {
				continue
			}
			used[strings.TrimSuffix(s.metric, "_bucket")] = true
			for _, l := range s.labels {
				assert.Contains(t, labels, l, "%s matches %s on %s, a label it does not have", where, s.metric, l)
			}
			for _, l := range scrapeLabels {
				assert.Contains(t, s.labels, l, "%s: %s has no %s matcher", where, s.metric, l)
			}
			if slices.Contains(labels, "tier") {
				assert.Contains(t, s.labels, "tier", "%s: %s follows the tier variable", where, s.metric)
			}
		}
		for _, g := range q.groupings {
			assert.Contains(t, g.labels, "instance", "%s: sum by keeps hosts apart: %s", where, expr)
			for _, s := range g.selectors {
				labels, _ := familyLabels(mfs, s.metric)
				for _, l := range g.labels {
					assert.Contains(t, labels, l, "%s groups %s by %s, a label it does not have", where, s.metric, l)
				}
			}
		}
		return q
	}
	legend := regexp.MustCompile(`\{\{\s*([a-z_]+)\s*\}\}`)
	for _, p := range dash.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		for _, target := range p.Targets {
			q := check(p.Title, target.Expr)
			assert.Contains(t, target.LegendFormat, "{{instance}}", "%s: per-host legend", p.Title)
			for _, m := range legend.FindAllStringSubmatch(target.LegendFormat, -1) {
				if n := len(q.groupings); n > 0 { // the outermost by clause is the last one read
					assert.Contains(t, q.groupings[n-1].labels, m[1], "%s: legend label %s survives the sum", p.Title, m[1])
				}
			}
		}
	}
	vars := map[string]string{}
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*([a-z_]+)\)$`)
	for _, v := range dash.Templating.List {
		if v.Definition == "" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		require.NotNil(t, m, v.Definition)
		q, err := parsePromQL(m[1])
		require.NoError(t, err, v.Definition)
		labels, ok := familyLabels(mfs, q.selectors[0].metric)
		require.True(t, ok, v.Definition)
		assert.Contains(t, labels, m[2], v.Definition)
		vars[v.Name] = v.Definition
	}
	assert.Equal(t, `label_values(anvil_router_build_info, job)`, vars["job"])
	assert.Equal(t, `label_values(anvil_router_build_info{job=~"$job"}, instance)`, vars["instance"])
	assert.Equal(t, `label_values(anvil_router_tier_info{job=~"$job",instance=~"$instance"}, tier)`, vars["tier"],
		"tiers from the series every configured tier has, idle or unavailable")
	for _, must := range []string{"anvil_router_admission_member_active_requests", "anvil_router_admission_member_max_concurrency",
		"anvil_router_admission_tier_active_requests", "anvil_router_admission_tier_max_concurrency", "anvil_router_replica_member_pressure_ratio",
		"anvil_router_replica_member_pressure_freshness", "anvil_router_admission_refusals_total",
		"anvil_router_request_duration_seconds", "anvil_router_request_first_byte_seconds", "anvil_router_build_info"} {
		assert.True(t, used[must], "the dashboard shows %s", must)
	}
	for _, old := range []string{"anvil_router_replica_tier_active_requests", "anvil_router_replica_member_active_requests",
		"anvil_router_replica_member_pressure_ppm", "anvil_router_tier_active_requests", "anvil_router_tier_max_concurrency",
		"anvil_router_member_active_requests", "anvil_router_member_max_concurrency"} {
		assert.False(t, used[old], "the dashboard reads the strategy-labelled families and the ratio, not %s", old)
	}
	assert.Contains(t, raw, "histogram_quantile(0.99", "latency percentiles")
}

// The dashboard test's parser refuses what Prometheus would.
func TestDashboardParserRefuses(t *testing.T) {
	for _, bad := range []string{`sum by (instance (x)`, `rate(x[5q])`, `x{tier~"a"}`, `x{tier="a"`, `x{tier=a}`,
		`frobnicate(x)`, `sum by (instance) (x) y`, `x[5m`, `sum by (1) (x)`, `histogram_quantile(0.5, )`} {
		_, err := parsePromQL(bad)
		assert.Error(t, err, bad)
	}
	q, err := parsePromQL(`histogram_quantile(0.99, sum by (instance, le) (rate(a_bucket{job=~"$job",instance=~"$instance"}[5m]))) / 1e6`)
	require.NoError(t, err)
	assert.Equal(t, []promSelector{{metric: "a_bucket", labels: []string{"job", "instance"}}}, q.selectors)
	assert.Equal(t, []string{"instance", "le"}, q.groupings[0].labels)
}
