package routing

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/health"
)

// TestHealthResult pins what each ending of an attempt says about its member.
func TestHealthResult(t *testing.T) {
	cases := []struct {
		outcome   decisionlog.Outcome
		status    int
		firstByte time.Duration
		count429  bool
		want      health.Result
	}{
		{decisionlog.OutcomeSuccess, 200, 0, false, health.Success},
		{decisionlog.OutcomeUpstreamHTTPError, 500, 0, false, health.Failure},
		{decisionlog.OutcomeUpstreamHTTPError, 503, 0, false, health.Failure}, // engine death
		{decisionlog.OutcomeUpstreamHTTPError, 400, 0, false, health.Success}, // the request was refused, the member works
		{decisionlog.OutcomeUpstreamHTTPError, 404, 0, false, health.Success},
		{decisionlog.OutcomeUpstreamHTTPError, 429, 0, false, health.Success},
		{decisionlog.OutcomeUpstreamHTTPError, 429, 0, true, health.Failure},
		{decisionlog.OutcomeUpstreamHTTPError, 200, time.Millisecond, false, health.Failure}, // an in-band error event
		{decisionlog.OutcomeUpstreamTransportError, 502, 0, false, health.Failure},
		{decisionlog.OutcomeStreamTruncated, 200, time.Millisecond, false, health.Failure},
		{decisionlog.OutcomeMalformedStream, 200, time.Millisecond, false, health.Failure},
		{decisionlog.OutcomeUpstreamTimeout, 504, 0, false, health.Failure},                // nothing in time
		{decisionlog.OutcomeUpstreamTimeout, 200, time.Millisecond, false, health.Neutral}, // a long answer
		{decisionlog.OutcomeClientCanceled, 499, 0, false, health.Neutral},
		{decisionlog.OutcomeClientCanceled, 200, time.Millisecond, false, health.Neutral},
		{decisionlog.OutcomeRefused, 400, 0, false, health.Neutral},
		{decisionlog.OutcomeNotAdmitted, 503, 0, false, health.Neutral},
	}
	for _, c := range cases {
		rec := decisionlog.Record{Outcome: c.outcome, Status: c.status, FirstByte: c.firstByte}
		assert.Equal(t, c.want, result(rec, c.count429), "%s %d first byte %v 429s %v", c.outcome, c.status, c.firstByte, c.count429)
	}
}
