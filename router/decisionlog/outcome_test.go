package decisionlog

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestOutcomeOrder pins the outcome list by name: reports list outcomes in this order, so a reorder
// must be a deliberate change here.
func TestOutcomeOrder(t *testing.T) {
	want := []string{"success", "refused", "not_admitted", "upstream_http_error", "upstream_timeout",
		"upstream_transport_error", "client_canceled", "malformed_stream", "stream_truncated", "shutdown",
		"internal_error", "body_refused"}
	all := Outcomes()
	assert.Len(t, all, NumOutcomes)
	for i, o := range all {
		assert.Equal(t, want[i], string(o))
		assert.Equal(t, i, o.Index())
		assert.True(t, o.Valid())
	}
	assert.True(t, OutcomeInternalError.Admitted(), "an internal error is recorded only while a lease is held")
	lo, hi, _ := OutcomeInternalError.attemptRange()
	assert.Equal(t, [2]int{0, 1}, [2]int{lo, hi}, "a panic may come before or during the one attempt")
	assert.Equal(t, -1, Outcome("nope").Index())
	assert.False(t, Outcome("nope").Valid())
}

func TestTerminal(t *testing.T) {
	cases := []struct {
		end     Ending
		wrote   int
		outcome Outcome
		status  int
	}{
		{EndComplete, 200, OutcomeSuccess, 200},
		{EndComplete, 201, OutcomeSuccess, 201},
		{EndHTTPError, 503, OutcomeUpstreamHTTPError, 503},
		{EndHTTPError, 429, OutcomeUpstreamHTTPError, 429},
		{EndErrorEvent, 200, OutcomeUpstreamHTTPError, 200},
		{EndTransport, 0, OutcomeUpstreamTransportError, 502},
		{EndCut, 0, OutcomeStreamTruncated, 502},
		{EndCut, 200, OutcomeStreamTruncated, 200},
		{EndMalformed, 0, OutcomeMalformedStream, 502},
		{EndMalformed, 200, OutcomeMalformedStream, 200},
		{EndClientCancel, 0, OutcomeClientCanceled, StatusClientClosed},
		{EndClientCancel, 200, OutcomeClientCanceled, 200},
		{EndFirstByteTimeout, 0, OutcomeUpstreamTimeout, 504},
		{EndTimeout, 0, OutcomeUpstreamTimeout, 504},
		{EndTimeout, 200, OutcomeUpstreamTimeout, 200},
		{EndShutdown, 0, OutcomeShutdown, 503},
		{EndShutdown, 200, OutcomeShutdown, 200},
		{EndBodyRefused, 0, OutcomeBodyRefused, 400},
		{EndBodyRefused, 413, OutcomeBodyRefused, 413},
		{numEndings, 0, OutcomeUpstreamTransportError, 502},
	}
	for _, c := range cases {
		t.Run(c.end.String(), func(t *testing.T) {
			o, status := Terminal(c.end, c.wrote)
			assert.Equal(t, c.outcome, o)
			assert.Equal(t, c.status, status)
			assert.True(t, o.Admitted(), "every attempt ending follows an admission")
		})
	}
	assert.Equal(t, "invalid", numEndings.String())
}
