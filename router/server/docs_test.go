package server_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/scheduler"
)

var operationsDoc = filepath.Join("..", "..", "docs", "OPERATIONS.md")

// documentedMetric is one row of OPERATIONS.md's metrics table.
type documentedMetric struct {
	kind   string
	labels []string
}

// documentedMetrics reads the metrics table: | `name` | type | `label`, ... | meaning |.
func documentedMetrics(t *testing.T) map[string]documentedMetric {
	t.Helper()
	md, err := os.ReadFile(operationsDoc)
	require.NoError(t, err)
	out := map[string]documentedMetric{}
	backticked := regexp.MustCompile("`([a-z_]+)`")
	for _, line := range strings.Split(string(md), "\n") {
		if !strings.HasPrefix(line, "| `anvil_router_") {
			continue
		}
		cells := strings.Split(line, "|")
		require.GreaterOrEqual(t, len(cells), 5, line)
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		var labels []string
		for _, m := range backticked.FindAllStringSubmatch(cells[3], -1) {
			labels = append(labels, m[1])
		}
		slices.Sort(labels)
		out[name] = documentedMetric{kind: strings.TrimSpace(cells[2]), labels: labels}
	}
	require.NotEmpty(t, out)
	return out
}

// exportedFamilies drives real traffic through a router with a direct, a round-robin and a capacity
// tier, and a direct tier with an admission queue, until every family the router can export has
// series, and gathers them.
func exportedFamilies(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	direct, slowest := startMember(t, servedModel, 7), startMember(t, servedModel, 9)
	slow(t, slowest, 1000) // a second per engine step: its one slot stays held while the test needs it
	rr, pool := startMembers(t, 2), startMembers(t, 2)
	cfg := strings.Replace(mixedYAML(direct, rr, pool), "aliases:\n", "aliases:\n  - {id: waits, tier: queued}\n", 1) +
		fmt.Sprintf("  - id: queued\n    kind: direct\n    served_model: %s\n    endpoint: %s\n    max_concurrency: 1\n", servedModel, slowest.URL()) +
		"    queue: {max_waiting: 1, timeout: 10ms}\n    gates: {max_context_tokens: 4096, max_output_tokens: 512}\n"
	r := startRouter(t, cfg)

	// The queued tier: one stream holds its only lease (its headers arrived, so it was admitted), and
	// the next request waits the queue's 10 ms and is refused.
	ctx, cancel := context.WithCancel(context.Background())
	held := r.post(t, ctx, "/v1/chat/completions", bodyFor("waits", 64, true))
	code, out, _ := r.do(t, "/v1/chat/completions", bodyFor("waits", 2, false))
	require.Equal(t, http.StatusServiceUnavailable, code, out)
	r.wait(t, 1)
	cancel()
	_ = held.Body.Close()
	r.wait(t, 1)
	untilPressure(t, r, func(p map[string]scheduler.Pressure) bool {
		return p["m00"].Freshness() == scheduler.FreshnessFresh && p["m01"].Freshness() == scheduler.FreshnessFresh
	})
	for _, alias := range []string{"big", "spread", "chat"} {
		code, out, _ := r.do(t, "/v1/chat/completions", bodyFor(alias, 2, false))
		require.Equal(t, http.StatusOK, code, out)
		r.wait(t, 1)
	}
	status, body := r.admin(t, `{"action":"quiesce","tier":"replicas"}`)
	require.Equal(t, http.StatusOK, status, body)
	code, _, _ = r.do(t, "/v1/chat/completions", chatBody(2, false))
	require.Equal(t, http.StatusServiceUnavailable, code)
	r.wait(t, 1)
	mfs, err := r.srv.Registry().Gather()
	require.NoError(t, err)
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
	}
	return byName
}

// TestEveryMetricIsDocumented: OPERATIONS.md lists exactly the anvil_router_ families the router
// exports, each with its type and label names.
func TestEveryMetricIsDocumented(t *testing.T) {
	docs := documentedMetrics(t)
	exported := exportedFamilies(t)
	for name, mf := range exported {
		if !strings.HasPrefix(name, "anvil_router_") {
			assert.True(t, strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_"), "undocumented family %s", name)
			continue
		}
		doc, ok := docs[name]
		if !assert.True(t, ok, "%s is exported but not documented", name) {
			continue
		}
		assert.Equal(t, strings.ToLower(mf.GetType().String()), doc.kind, "type of %s", name)
		var labels []string
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		slices.Sort(labels)
		assert.Equal(t, doc.labels, labels, "labels of %s", name)
	}
	for name := range docs {
		assert.Contains(t, exported, name, "%s is documented but not exported", name)
	}
}
