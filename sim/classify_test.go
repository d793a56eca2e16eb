package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestClassifyTable states the relay's rules as the sim applies them. The module root's
// simrelay_test.go pins the same table against the real relay over loopback HTTP.
func TestClassifyTable(t *testing.T) {
	cases := []struct {
		end                Ending
		stream, firstEvent bool
		outcome            Outcome
		status             int
	}{
		{EndComplete, false, false, OutcomeSuccess, 200},
		{EndComplete, true, true, OutcomeSuccess, 200},
		{EndHTTPError, false, false, OutcomeUpstreamHTTPError, 503},
		{EndHTTPError, true, false, OutcomeUpstreamHTTPError, 503},
		{EndRefused, true, false, OutcomeUpstreamTransportError, 502},
		{EndCut, false, false, OutcomeUpstreamTransportError, 502},
		// A stream cut before its first byte is a transport error: nothing was framed yet.
		{EndCut, true, false, OutcomeUpstreamTransportError, 502},
		{EndCut, true, true, OutcomeStreamTruncated, 200},
		{EndClientCancel, false, false, OutcomeClientCanceled, StatusClientClosed},
		{EndClientCancel, true, false, OutcomeClientCanceled, StatusClientClosed},
		// After the first event the 200 headers are on the wire: the status stays 200.
		{EndClientCancel, true, true, OutcomeClientCanceled, 200},
		{EndFirstByteTimeout, false, false, OutcomeUpstreamTimeout, 504},
		{EndFirstByteTimeout, true, false, OutcomeUpstreamTimeout, 504},
		{EndTimeout, false, false, OutcomeUpstreamTimeout, 504},
		{EndTimeout, true, true, OutcomeUpstreamTimeout, 200},
		// firstEvent only matters for a stream: an ordinary body is written whole at the end.
		{EndCut, false, true, OutcomeUpstreamTransportError, 502},
		{EndClientCancel, false, true, OutcomeClientCanceled, StatusClientClosed},
	}
	for _, c := range cases {
		t.Run(c.end.String(), func(t *testing.T) {
			o, st := Classify(c.end, c.stream, c.firstEvent, 503)
			assert.Equal(t, c.outcome, o, "stream=%v firstEvent=%v", c.stream, c.firstEvent)
			assert.Equal(t, c.status, st, "stream=%v firstEvent=%v", c.stream, c.firstEvent)
		})
	}
	assert.Equal(t, "invalid", numEndings.String())
	o, st := Classify(numEndings, true, true, 0)
	assert.Equal(t, OutcomeUpstreamTransportError, o, "an unknown ending is a transport error")
	assert.Equal(t, 502, st)
}
