package server_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an in-process OTLP/HTTP receiver: it decodes every POST /v1/traces as the
// collector's protobuf and keeps the spans. hold, when set, keeps each export waiting until it is
// closed (a stalled collector).
type collector struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []*tracepb.Span
	res  []*commonpb.KeyValue // the resource attributes of the last export
	hold chan struct{}
}

func startCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		if c.hold != nil {
			select {
			case <-c.hold:
			case <-r.Context().Done():
				return
			}
		}
		body, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err != nil || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			c.res = rs.GetResource().GetAttributes()
			for _, ss := range rs.ScopeSpans {
				c.got = append(c.got, ss.Spans...)
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// spans returns the spans of trace tid (hex) received so far.
func (c *collector) spans(tid string) []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range c.got {
		if hex.EncodeToString(s.TraceId) == tid {
			out = append(out, s)
		}
	}
	return out
}

func (c *collector) all() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.Span(nil), c.got...)
}

// tracingYAML is the tracing section pointing at the collector.
func (c *collector) tracingYAML(sampler string) string {
	return fmt.Sprintf("tracing:\n  endpoint: %s\n  sampler: %s\n  service_name: anvil-test\n", c.srv.URL, sampler)
}

// byName finds the one span called name.
func byName(t *testing.T, spans []*tracepb.Span, name string) *tracepb.Span {
	t.Helper()
	var found *tracepb.Span
	for _, s := range spans {
		if s.Name == name {
			require.Nil(t, found, "one span named %s", name)
			found = s
		}
	}
	require.NotNil(t, found, "a span named %s", name)
	return found
}

// attrs flattens a span's attributes to strings.
func attrs(s *tracepb.Span) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		out[kv.Key] = anyString(kv.Value)
	}
	return out
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	}
	return v.String()
}

// everyString is every string an export carries that a caller could have planted something in:
// span names, attribute keys and values, event names and their attributes, status messages and
// the resource's attributes.
func everyString(spans []*tracepb.Span, res []*commonpb.KeyValue) []string {
	var out []string
	kvs := func(list []*commonpb.KeyValue) {
		for _, kv := range list {
			out = append(out, kv.Key, anyString(kv.Value))
		}
	}
	for _, s := range spans {
		out = append(out, s.Name, s.GetStatus().GetMessage(), s.TraceState)
		kvs(s.Attributes)
		for _, e := range s.Events {
			out = append(out, e.Name)
			kvs(e.Attributes)
		}
	}
	kvs(res)
	return out
}

// tracedPost posts body with the given extra headers and reads the whole answer.
func tracedPost(t *testing.T, r *router, path, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, r.http.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}
