package load

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
)

func tracingDoc(section string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", "minimal.yaml"))
	if err != nil {
		panic(err)
	}
	return append(b, section...)
}

// Tracing is off without an endpoint; the section and the OTEL_ variables say the same things, and
// the variable wins, naming itself in its errors.
func TestTracingSettings(t *testing.T) {
	base := map[string]string{config.EnvAPIToken: callerTok}
	with := func(kv ...string) map[string]string {
		m := map[string]string{config.EnvAPIToken: callerTok}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	off := mustParse(t, tracingDoc(""), base)
	assert.False(t, off.Tracing().Enabled())

	yaml := "tracing:\n  endpoint: http://collector:4318\n  sampler: traceidratio\n  sampler_arg: 0.5\n  resource_attributes: a=1, b=x%2Cy\n"
	c := mustParse(t, tracingDoc(yaml), base)
	tr := c.Tracing()
	assert.Equal(t, config.Tracing{Endpoint: "http://collector:4318", Protocol: config.ProtocolHTTP, ServiceName: config.DefaultServiceName,
		Sampler: "traceidratio", SamplerArg: 0.5, ResourceAttributes: []config.Attribute{{Key: "a", Value: "1"}, {Key: "b", Value: "x,y"}}}, tr)

	env := with(config.EnvOTLPEndpoint, "https://otel.example:4317", config.EnvOTLPProtocol, "grpc", config.EnvServiceName, "east",
		config.EnvTracesSampler, "always_off", config.EnvTracesSamplerArg, "0.1", config.EnvResourceAttributes, "k=v")
	tr = mustParse(t, tracingDoc(yaml), env).Tracing()
	assert.Equal(t, config.Tracing{Endpoint: "https://otel.example:4317", Protocol: config.ProtocolGRPC, ServiceName: "east",
		Sampler: "always_off", SamplerArg: 0.1, ResourceAttributes: []config.Attribute{{Key: "k", Value: "v"}}}, tr, "the environment wins")

	assert.False(t, mustParse(t, tracingDoc(yaml), with(config.EnvSDKDisabled, "true")).Tracing().Enabled())
	assert.True(t, mustParse(t, tracingDoc(""), with(config.EnvOTLPEndpoint, "http://c:4318")).Tracing().Enabled(),
		"the variable alone turns tracing on")
}

// The per-signal variables win over the general ones and the section; a traces endpoint is marked
// to be used as-is. service.name follows the specification: OTEL_SERVICE_NAME, then service.name in
// the resource attributes, then the default.
func TestTracingPrecedence(t *testing.T) {
	env := func(kv ...string) map[string]string {
		m := map[string]string{config.EnvAPIToken: callerTok}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	yaml := "tracing:\n  endpoint: http://yaml:4318\n  protocol: grpc\n  resource_attributes: service.name=from-attrs,a=1\n"
	tr := mustParse(t, tracingDoc(yaml), env(config.EnvOTLPEndpoint, "http://base:4318", config.EnvOTLPTracesEndpoint, "http://traces:4318/custom",
		config.EnvOTLPProtocol, "grpc", config.EnvOTLPTracesProtocol, "http/json")).Tracing()
	assert.Equal(t, "http://traces:4318/custom", tr.Endpoint)
	assert.True(t, tr.TracesURL, "a traces endpoint is used as-is")
	assert.Equal(t, config.ProtocolHTTPJSON, tr.Protocol)
	assert.Equal(t, "from-attrs", tr.ServiceName, "service.name among the attributes beats the default")

	tr = mustParse(t, tracingDoc(yaml), env(config.EnvServiceName, "from-env")).Tracing()
	assert.Equal(t, "from-env", tr.ServiceName, "OTEL_SERVICE_NAME beats the attributes")
	assert.False(t, tr.TracesURL)
	assert.Equal(t, config.ProtocolGRPC, tr.Protocol)
	assert.Equal(t, config.DefaultServiceName, mustParse(t, tracingDoc("tracing:\n  endpoint: http://c\n"), env()).Tracing().ServiceName)
	assert.True(t, mustParse(t, tracingDoc(""), env(config.EnvOTLPTracesEndpoint, "http://c:4318/v1/traces")).Tracing().Enabled(),
		"the traces variable alone turns tracing on")
}

func TestTracingRefusals(t *testing.T) {
	cases := []struct {
		name, yaml string
		env        map[string]string
		path       string
	}{
		{"credentials in the endpoint", "tracing:\n  endpoint: http://user:" + callerTok + "@c:4318\n", nil, "tracing.endpoint"},
		{"not http", "tracing:\n  endpoint: ftp://c\n", nil, "tracing.endpoint"},
		{"variable endpoint", "", map[string]string{config.EnvOTLPEndpoint: "c:4318"}, config.EnvOTLPEndpoint},
		{"protocol", "tracing:\n  endpoint: http://c\n  protocol: http/xml\n", nil, "tracing.protocol"},
		{"traces protocol", "tracing:\n  endpoint: http://c\n", map[string]string{config.EnvOTLPTracesProtocol: "thrift"}, config.EnvOTLPTracesProtocol},
		{"traces endpoint", "tracing:\n  endpoint: http://c\n", map[string]string{config.EnvOTLPTracesEndpoint: "c:4318"}, config.EnvOTLPTracesEndpoint},
		{"sampler", "tracing:\n  endpoint: http://c\n  sampler: jaeger_remote\n", nil, "tracing.sampler"},
		{"ratio", "tracing:\n  endpoint: http://c\n  sampler_arg: 1.5\n", nil, "tracing.sampler_arg"},
		{"variable ratio", "tracing:\n  endpoint: http://c\n", map[string]string{config.EnvTracesSamplerArg: "half"}, config.EnvTracesSamplerArg},
		{"attributes", "tracing:\n  endpoint: http://c\n  resource_attributes: novalue\n", nil, "tracing.resource_attributes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{config.EnvAPIToken: callerTok}
			for k, v := range tc.env {
				env[k] = v
			}
			_, err := Parse(tracingDoc(tc.yaml), envMap(env))
			require.Error(t, err)
			assert.True(t, errors.Is(err, config.ErrInvalid))
			assert.Contains(t, err.Error(), tc.path+":")
			assert.NotContains(t, err.Error(), callerTok, "an error never repeats the value")
		})
	}
}

// FuzzResourceAttributes: whatever OTEL_RESOURCE_ATTRIBUTES holds, the parser either refuses it or
// returns bounded pairs of visible text.
func FuzzResourceAttributes(f *testing.F) {
	for _, s := range []string{"", "a=b", "a=b, c = d", "k=%2C", "=v", "k", "k=%zz", strings.Repeat("k=v,", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		attrs, err := config.ParseResourceAttributes(s)
		if err != nil {
			assert.Nil(t, attrs)
			return
		}
		assert.LessOrEqual(t, len(attrs), 64)
		for _, a := range attrs {
			assert.NotEmpty(t, a.Key)
			assert.NotContains(t, a.Key, "=")
			assert.NotContains(t, a.Key, ",")
		}
	})
}
