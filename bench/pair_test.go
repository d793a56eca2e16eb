package bench

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pairCall is one run RunPaired asked for.
type pairCall struct {
	target string
	round  int
}

// scripted is a RunFunc that records each call and answers one record per run: stopped early where
// stop names the call, failing where fail does, cancelling the comparison where cancel does.
type scripted struct {
	calls  []pairCall
	stop   map[pairCall]string
	fail   map[pairCall]error
	cancel map[pairCall]context.CancelFunc
}

func (s *scripted) run(_ context.Context, _ *Client, _ Plan, t Target, round int) (*RunResult, error) {
	k := pairCall{t.Name, round}
	s.calls = append(s.calls, k)
	if err := s.fail[k]; err != nil {
		return nil, err
	}
	if c := s.cancel[k]; c != nil {
		c()
	}
	return &RunResult{Target: t.Info(), Records: []Record{{Target: t.Name, Round: round}}, Stopped: s.stop[k]}, nil
}

func pairTargets() (Target, Target) {
	return Target{Name: "direct", URLs: []string{"http://members.test"}, Model: "m"},
		Target{Name: "routed", URLs: []string{"http://router.test"}, Model: "alias"}
}

func TestRunPairedOrderAndPooling(t *testing.T) {
	d, r := pairTargets()
	for name, tc := range map[string]struct {
		routedFirst bool
		want        []pairCall
	}{
		"direct first": {false, []pairCall{{"direct", 0}, {"routed", 0}, {"routed", 1}, {"direct", 1}, {"direct", 2}, {"routed", 2}}},
		"routed first": {true, []pairCall{{"routed", 0}, {"direct", 0}, {"direct", 1}, {"routed", 1}, {"routed", 2}, {"direct", 2}}},
	} {
		t.Run(name, func(t *testing.T) {
			s := &scripted{stop: map[pairCall]string{{"direct", 1}: "max in flight", {"direct", 2}: "error rate"}}
			p := closedPlan(1, 2, 0, 0, 1)
			cl := NewClient(1, 64)
			defer cl.Close()
			res, err := RunPaired(context.Background(), cl, &p, Pair{Direct: d, Routed: r, Rounds: 3, RoutedFirst: tc.routedFirst}, s.run)
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.calls)
			require.Len(t, res.Runs, 6)
			require.Len(t, res.Records, 6)
			for i, rec := range res.Records {
				assert.Equal(t, tc.want[i].target, rec.Target, "records pooled in the order the runs ended")
				assert.Equal(t, tc.want[i].round, rec.Round)
			}
			require.Len(t, res.Header.Targets, 2)
			assert.Equal(t, "direct", res.Header.Targets[0].Name, "the header names direct, then routed")
			assert.Equal(t, "round 1: max in flight; round 2: error rate", res.Header.Targets[0].Stopped)
			assert.Equal(t, "routed", res.Header.Targets[1].Name)
			assert.Empty(t, res.Header.Targets[1].Stopped)
			assert.Equal(t, p.Label, res.Header.Label)
		})
	}
}

// A cancelled comparison finishes the round under way and starts no other; a failed run ends it at
// once with the run's error.
func TestRunPairedEnds(t *testing.T) {
	d, r := pairTargets()
	boom := errors.New("boom")
	for name, tc := range map[string]struct {
		script  func(cancel context.CancelFunc) *scripted
		wantErr error
		want    []pairCall
	}{
		"cancelled in round 1": {
			script: func(cancel context.CancelFunc) *scripted {
				return &scripted{cancel: map[pairCall]context.CancelFunc{{"routed", 1}: cancel}}
			},
			want: []pairCall{{"direct", 0}, {"routed", 0}, {"routed", 1}, {"direct", 1}},
		},
		"failed in round 0": {
			script:  func(context.CancelFunc) *scripted { return &scripted{fail: map[pairCall]error{{"routed", 0}: boom}} },
			wantErr: boom,
			want:    []pairCall{{"direct", 0}, {"routed", 0}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := tc.script(cancel)
			p := closedPlan(1, 2, 0, 0, 1)
			cl := NewClient(1, 64)
			defer cl.Close()
			res, err := RunPaired(ctx, cl, &p, Pair{Direct: d, Routed: r, Rounds: 5}, s.run)
			assert.Equal(t, tc.want, s.calls)
			if tc.wantErr != nil {
				assert.ErrorIs(t, err, tc.wantErr)
				assert.Nil(t, res)
				return
			}
			require.NoError(t, err)
			assert.Len(t, res.Runs, len(tc.want))
		})
	}
}

func TestJoinStopsIsBounded(t *testing.T) {
	long := make([]string, 40)
	for i := range long {
		long[i] = strings.Repeat("x", 30)
	}
	assert.Len(t, joinStops(long), 512)
	assert.Equal(t, "", joinStops([]string{"", ""}))
}

// Through the real Run (run nil) over HTTP: both targets answer every request, and the report of the
// pooled records is a comparison of the two.
func TestRunPairedOverHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		hits := map[string]int{}
		c, base, stop := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			hits[r.URL.Path[:strings.Index(r.URL.Path[1:], "/")+1]]++
			mu.Unlock()
			sseHeaders(w)
			flushWrite(w, roleChunk)
			for range 4 {
				flushWrite(w, chatChunk("tok"))
			}
			flushWrite(w, finishChunk+usageChunk(16, 4)+doneFrame)
		}))
		defer stop()
		d := Target{Name: "direct", URLs: []string{base + "/members"}, Model: "m"}
		r := Target{Name: "routed", URLs: []string{base + "/router"}, Model: "alias"}
		p := closedPlan(2, 6, 0, 0, 1)
		res, err := RunPaired(t.Context(), c, &p, Pair{Direct: d, Routed: r, Rounds: 2}, nil)
		require.NoError(t, err)
		mu.Lock()
		assert.Equal(t, map[string]int{"/members": 12, "/router": 12}, hits)
		mu.Unlock()
		require.Len(t, res.Records, 24)
		rep := NewReport(res.Header, res.Records)
		require.NotNil(t, rep.Comparison)
		assert.Len(t, rep.Results, 2)
		for _, rr := range rep.Results {
			assert.Equal(t, 12, rr.Completed, rr.Target)
		}
		var text strings.Builder
		require.NoError(t, rep.Text(&text))
		assert.NotEmpty(t, text.String())
	})
}

// A run's header names one target: its report is that result alone, with no comparison.
func TestNewReportOfOneRun(t *testing.T) {
	p := closedPlan(1, 1, 0, 0, 1)
	d, _ := pairTargets()
	rep := NewReport(Header(&p, []TargetInfo{d.Info()}), nil)
	assert.Nil(t, rep.Comparison)
	require.Len(t, rep.Results, 1)
	assert.Equal(t, p.Label, rep.Label)
}
