package sim

import (
	"testing"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/stretchr/testify/assert"
)

// TestClassifyTable states the relay's rules as the sim applies them through decisionlog.Terminal.
// The module root's simrelay_test.go pins the same cases against the real relay over loopback HTTP.
func TestClassifyTable(t *testing.T) {
	cases := []struct {
		end                decisionlog.Ending
		stream, firstEvent bool
		outcome            decisionlog.Outcome
		status             int
	}{
		{decisionlog.EndComplete, false, false, decisionlog.OutcomeSuccess, 200},
		{decisionlog.EndComplete, true, true, decisionlog.OutcomeSuccess, 200},
		{decisionlog.EndHTTPError, false, false, decisionlog.OutcomeUpstreamHTTPError, 503},
		{decisionlog.EndHTTPError, true, false, decisionlog.OutcomeUpstreamHTTPError, 503},
		{decisionlog.EndTransport, true, false, decisionlog.OutcomeUpstreamTransportError, 502},
		{decisionlog.EndCut, false, false, decisionlog.OutcomeUpstreamTransportError, 502},
		// A stream cut before its first byte is a transport error: nothing was framed yet.
		{decisionlog.EndCut, true, false, decisionlog.OutcomeUpstreamTransportError, 502},
		{decisionlog.EndCut, true, true, decisionlog.OutcomeStreamTruncated, 200},
		{decisionlog.EndClientCancel, false, false, decisionlog.OutcomeClientCanceled, decisionlog.StatusClientClosed},
		{decisionlog.EndClientCancel, true, false, decisionlog.OutcomeClientCanceled, decisionlog.StatusClientClosed},
		// After the first event the 200 headers are on the wire: the status stays 200.
		{decisionlog.EndClientCancel, true, true, decisionlog.OutcomeClientCanceled, 200},
		{decisionlog.EndFirstByteTimeout, false, false, decisionlog.OutcomeUpstreamTimeout, 504},
		{decisionlog.EndFirstByteTimeout, true, false, decisionlog.OutcomeUpstreamTimeout, 504},
		{decisionlog.EndTimeout, false, false, decisionlog.OutcomeUpstreamTimeout, 504},
		{decisionlog.EndTimeout, true, true, decisionlog.OutcomeUpstreamTimeout, 200},
		// firstEvent only matters for a stream: an ordinary body is written whole at the end.
		{decisionlog.EndCut, false, true, decisionlog.OutcomeUpstreamTransportError, 502},
		{decisionlog.EndClientCancel, false, true, decisionlog.OutcomeClientCanceled, decisionlog.StatusClientClosed},
	}
	for _, c := range cases {
		t.Run(c.end.String(), func(t *testing.T) {
			o, st := Classify(c.end, c.stream, c.firstEvent, 503)
			assert.Equal(t, c.outcome, o, "stream=%v firstEvent=%v", c.stream, c.firstEvent)
			assert.Equal(t, c.status, st, "stream=%v firstEvent=%v", c.stream, c.firstEvent)
		})
	}
}
