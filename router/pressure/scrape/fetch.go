package scrape

import (
	"context"
	"io"
	"net/http"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
)

// MaxBodyBytes is the largest /metrics body Parse is given. Fetch reads at most one
// byte more, so a longer page is detected as oversize without reading it all.
const MaxBodyBytes = 1 << 20

// acceptText asks for the classic text exposition format, which vLLM's
// prometheus_client serves by default.
const acceptText = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// Fetch collects one vLLM member's pressure: FetchWith(adapter.ReadVLLM, ...).
func Fetch(ctx context.Context, client *http.Client, baseURL, servedModel string) (pressure.Sample, pressure.Class) {
	return FetchWith(ctx, adapter.ReadVLLM, client, baseURL, servedModel)
}

// FetchWith collects one member's pressure: GET {baseURL}/metrics within pressure.FetchTimeout
// (or ctx's earlier deadline), at most MaxBodyBytes+1 bytes of body, then ParseWith(read, ...).
//
// Anything that prevents an answer (a bad URL, a nil client, a transport error, a
// non-200 status, a timeout or cancellation, including one while reading the body)
// is pressure.ClassFailed. An answer that cannot be used (oversize body, parse error,
// missing or invalid series) is pressure.ClassUnknown. Errors are classified, never
// returned: no error text, URL or metric text leaves this function.
//
// The timeout is a deadline on the request context, so a member that trickles its
// body is cut off too; a transport that ignores cancellation is bounded by the
// cache's fixed worker count instead.
func FetchWith(ctx context.Context, read adapter.Adapter, client *http.Client, baseURL, servedModel string) (pressure.Sample, pressure.Class) {
	if client == nil || read == nil {
		return pressure.Sample{}, pressure.ClassFailed
	}
	ctx, cancel := context.WithTimeout(ctx, pressure.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL(baseURL), nil)
	if err != nil {
		return pressure.Sample{}, pressure.ClassFailed
	}
	req.Header.Set("Accept", acceptText)
	resp, err := client.Do(req)
	if err != nil {
		return pressure.Sample{}, pressure.ClassFailed
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return pressure.Sample{}, pressure.ClassFailed
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		return pressure.Sample{}, pressure.ClassFailed
	}
	if len(body) > MaxBodyBytes {
		return pressure.Sample{}, pressure.ClassUnknown
	}
	return ParseWith(read, body, servedModel)
}

func metricsURL(baseURL string) string {
	for len(baseURL) > 0 && baseURL[len(baseURL)-1] == '/' {
		baseURL = baseURL[:len(baseURL)-1]
	}
	return baseURL + "/metrics"
}
