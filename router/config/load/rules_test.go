package load

import (
	"errors"
	"strings"
	"testing"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBaseDocParses(t *testing.T) {
	c := mustParse(t, []byte(baseDoc), baseEnv())
	assert.Equal(t, "127.0.0.1:9000", c.Listen())
	assert.Len(t, c.Tiers(), 3)
	assert.Len(t, c.Aliases(), 4)
}

// TestSemanticRules covers every validation rule after the gate: each case
// edits the valid base document and expects one exact message.
func TestSemanticRules(t *testing.T) {
	type edit func(t *testing.T, d doc)
	set := func(path string, v any) edit { return func(t *testing.T, d doc) { d.set(t, path, v) } }
	del := func(path string) edit { return func(t *testing.T, d doc) { d.del(t, path) } }
	cases := []struct {
		name  string
		edits []edit
		env   map[string]string
		want  string
	}{
		// listen and tls
		{"listen no port", []edit{set("listen", "127.0.0.1")}, nil, "config: listen: must be host:port with a port 0-65535"},
		{"listen big port", []edit{set("listen", "127.0.0.1:65536")}, nil, "config: listen: must be host:port with a port 0-65535"},
		{"listen named port", []edit{set("listen", "127.0.0.1:http")}, nil, "config: listen: must be host:port with a port 0-65535"},
		{"listen bad host", []edit{set("listen", "bad_host:80")}, nil, "config: listen: must be host:port with a port 0-65535"},
		{"metrics listen bad", []edit{set("metrics.listen", "10.0.0.1")}, nil, "config: metrics.listen: must be host:port with a port 0-65535"},
		{"metrics listen empty", []edit{set("metrics.listen", "")}, nil, "config: metrics.listen: must be host:port with a port 0-65535"},
		{"metrics listen on the main port", []edit{set("metrics.listen", "127.0.0.1:9000")}, nil, "config: metrics.listen: must differ from listen"},
		{"tls half", []edit{set("tls", map[string]any{"cert_file": "/c.pem"})}, nil, "config: tls: cert_file and key_file must be set together"},
		{"tls empty path", []edit{set("tls", map[string]any{"cert_file": "", "key_file": "/k"})}, nil, "config: tls.cert_file: must be a file path of 1-4096 characters without control characters"},
		{"tls control char", []edit{set("tls", map[string]any{"cert_file": "/c", "key_file": "/k\n"})}, nil, "config: tls.key_file: must be a file path of 1-4096 characters without control characters"},
		// limits, upstream, shutdown, log, decision log, readiness
		{"body too small", []edit{set("limits.max_body_bytes", 1023)}, nil, "config: limits.max_body_bytes: must be 1024-67108864"},
		{"body too big", []edit{set("limits.max_body_bytes", 67108865)}, nil, "config: limits.max_body_bytes: must be 1024-67108864"},
		{"inflight below the body limit", []edit{set("limits.max_body_bytes", 2<<20), set("limits.max_inflight_body_bytes", 1<<20)}, nil, "config: limits.max_inflight_body_bytes: must be 2097152-8589934592"},
		{"inflight too big", []edit{set("limits.max_inflight_body_bytes", 8<<30+1)}, nil, "config: limits.max_inflight_body_bytes: must be 1048576-8589934592"},
		{"unready negative", []edit{set("decision_log.unready_after", "-1s")}, nil, "config: decision_log.unready_after: must be 0s-24h"},
		{"unready long", []edit{set("decision_log.unready_after", "25h")}, nil, "config: decision_log.unready_after: must be 0s-24h"},
		{"caller share over 100", []edit{set("limits.caller_body_share_percent", 101)}, nil, "config: limits.caller_body_share_percent: must be 0-100"},
		{"caller share negative", []edit{set("limits.caller_body_share_percent", -1)}, nil, "config: limits.caller_body_share_percent: must be 0-100"},
		{"upload rate negative", []edit{set("limits.min_upload_bytes_per_second", -1)}, nil, "config: limits.min_upload_bytes_per_second: must be 0-1073741824"},
		{"upload rate too big", []edit{set("limits.min_upload_bytes_per_second", 1<<30+1)}, nil, "config: limits.min_upload_bytes_per_second: must be 0-1073741824"},
		{"upload grace short", []edit{set("limits.min_upload_grace", "500ms")}, nil, "config: limits.min_upload_grace: must be 1s-10m"},
		{"upload grace long", []edit{set("limits.min_upload_grace", "11m")}, nil, "config: limits.min_upload_grace: must be 1s-10m"},
		{"audio too small", []edit{set("limits.max_audio_bytes", 1023)}, nil, "config: limits.max_audio_bytes: must be 1024-1073741824"},
		{"audio too big", []edit{set("limits.max_audio_bytes", 1073741825)}, nil, "config: limits.max_audio_bytes: must be 1024-1073741824"},
		{"spill negative", []edit{set("limits.max_spill_bytes", -1)}, nil, "config: limits.max_spill_bytes: must be 0-1099511627776"},
		{"spill too big", []edit{set("limits.max_spill_bytes", 1099511627777)}, nil, "config: limits.max_spill_bytes: must be 0-1099511627776"},
		{"spill under one step", []edit{set("limits.max_spill_bytes", 1<<20-1)}, nil, "config: limits.max_spill_bytes: must be 0 (spilling off) or at least 1048576 (one spill step)"},
		{"spill tiny", []edit{set("limits.max_spill_bytes", 1)}, nil, "config: limits.max_spill_bytes: must be 0 (spilling off) or at least 1048576 (one spill step)"},
		{"connect short", []edit{set("upstream.connect_timeout", "99ms")}, nil, "config: upstream.connect_timeout: must be 100ms-1m"},
		{"connect negative", []edit{set("upstream.connect_timeout", "-1s")}, nil, "config: upstream.connect_timeout: must be 100ms-1m"},
		{"first byte long", []edit{set("upstream.first_byte_timeout", "61m")}, nil, "config: upstream.first_byte_timeout: must be 1s-1h"},
		{"timeout long", []edit{set("upstream.timeout", "25h")}, nil, "config: upstream.timeout: must be 1s-24h"},
		{"response small", []edit{set("upstream.max_response_bytes", 100)}, nil, "config: upstream.max_response_bytes: must be 1024-1073741824"},
		{"connect over first byte", []edit{set("upstream.connect_timeout", "30s"), set("upstream.first_byte_timeout", "10s")}, nil, "config: upstream.connect_timeout: must not exceed upstream.first_byte_timeout"},
		{"first byte over timeout", []edit{set("upstream.first_byte_timeout", "20m")}, nil, "config: upstream.first_byte_timeout: must not exceed upstream.timeout"},
		{"grace long", []edit{set("shutdown_grace", "11m")}, nil, "config: shutdown_grace: must be 0s-10m"},
		{"log format", []edit{set("log.format", "JSON")}, nil, "config: log.format: must be text or json"},
		{"log level", []edit{set("log.level", "trace")}, nil, "config: log.level: must be debug, info, warn or error"},
		{"ring zero", []edit{set("decision_log.ring_size", 0)}, nil, "config: decision_log.ring_size: must be 1-100000"},
		{"ring big", []edit{set("decision_log.ring_size", 100001)}, nil, "config: decision_log.ring_size: must be 1-100000"},
		{"line small", []edit{set("decision_log.max_line_bytes", 255)}, nil, "config: decision_log.max_line_bytes: must be 256-8192"},
		{"jsonl empty", []edit{set("decision_log.jsonl_path", "")}, nil, "config: decision_log.jsonl_path: must be a file path of 1-4096 characters without control characters"},
		{"intent empty", []edit{set("intent_file", "")}, nil, "config: intent_file: must be a file path of 1-4096 characters without control characters"},
		{"readiness interval", []edit{set("readiness.interval", "2m")}, nil, "config: readiness.interval: must be 100ms-1m"},
		{"readiness timeout", []edit{set("readiness.timeout", "50ms")}, nil, "config: readiness.timeout: must be 100ms-30s"},
		{"readiness timeout over interval", []edit{set("readiness.interval", "1s"), set("readiness.timeout", "2s")}, nil, "config: readiness.timeout: must not exceed readiness.interval"},
		// the collector
		{"gc percent small", []edit{set("runtime.gc_percent", 5)}, nil, "config: runtime.gc_percent: must be 10-10000"},
		{"gc percent big", []edit{set("runtime.gc_percent", 10001)}, nil, "config: runtime.gc_percent: must be 10-10000"},
		{"memory limit small", []edit{set("runtime.memory_limit_bytes", 1000)}, nil, "config: runtime.memory_limit_bytes: must be 33554432-1125899906842624"},
		{"memory limit big", []edit{set("runtime.memory_limit_bytes", int64(1)<<50+1)}, nil, "config: runtime.memory_limit_bytes: must be 33554432-1125899906842624"},
		{"memory share small", []edit{set("runtime.memory_limit_percent", 9)}, nil, "config: runtime.memory_limit_percent: must be 10-100"},
		{"memory share big", []edit{set("runtime.memory_limit_percent", 101)}, nil, "config: runtime.memory_limit_percent: must be 10-100"},
		// tiers: common fields
		{"no tiers", []edit{set("tiers", []any{})}, nil, "config: tiers: at least one tier is required"},
		{"tiers absent", []edit{del("tiers")}, nil, "config: tiers: at least one tier is required"},
		{"tier id missing", []edit{del("tiers[1].id")}, nil, "config: tiers[1].id: is required"},
		{"tier id upper", []edit{set("tiers[1].id", "Slow")}, nil, "config: tiers[1].id: must match [a-z0-9][a-z0-9._-]{0,63}"},
		{"tier id long", []edit{set("tiers[1].id", strings.Repeat("a", 65))}, nil, "config: tiers[1].id: must match [a-z0-9][a-z0-9._-]{0,63}"},
		{"tier id duplicate", []edit{set("tiers[2].id", "fast")}, nil, "config: tiers[2].id: duplicate tier id"},
		{"kind missing", []edit{del("tiers[0].kind")}, nil, "config: tiers[0].kind: is required"},
		{"kind bad", []edit{set("tiers[0].kind", "Replica")}, nil, "config: tiers[0].kind: must be direct or replica"},
		{"served model missing", []edit{del("tiers[0].served_model")}, nil, "config: tiers[0].served_model: is required"},
		{"served model space", []edit{set("tiers[0].served_model", "a b")}, nil, "config: tiers[0].served_model: must be 1-256 visible ASCII characters"},
		{"served model empty", []edit{set("tiers[0].served_model", "")}, nil, "config: tiers[0].served_model: must be 1-256 visible ASCII characters"},
		{"gates missing", []edit{del("tiers[0].gates")}, nil, "config: tiers[0].gates.max_context_tokens: is required"},
		{"context zero", []edit{set("tiers[0].gates.max_context_tokens", 0)}, nil, "config: tiers[0].gates.max_context_tokens: must be 1-10000000"},
		{"output zero", []edit{set("tiers[0].gates.max_output_tokens", 0)}, nil, "config: tiers[0].gates.max_output_tokens: must be 1-10000000"},
		{"output over context", []edit{set("tiers[0].gates.max_output_tokens", 8193)}, nil, "config: tiers[0].gates.max_output_tokens: must not exceed gates.max_context_tokens"},
		{"tier ceiling zero", []edit{set("tiers[2].max_concurrency", 0)}, nil, "config: tiers[2].max_concurrency: must be 1-1000000"},
		{"tier ceiling big", []edit{set("tiers[2].max_concurrency", 1000001)}, nil, "config: tiers[2].max_concurrency: must be 1-1000000"},
		{"api key env grammar", []edit{set("tiers[2].api_key_env", "big-key")}, nil, "config: tiers[2].api_key_env: must match [A-Z_][A-Z0-9_]{0,127}"},
		{"api key env reserved", []edit{set("tiers[2].api_key_env", "ANVIL_API_TOKEN")}, nil, "config: tiers[2].api_key_env: must not name a router token variable"},
		{"api key env unset", []edit{set("tiers[2].api_key_env", "OTHER_KEY")}, nil, "config: tiers[2].api_key_env: environment variable is not set"},
		{"api key env empty", nil, map[string]string{"BIG_API_KEY": ""}, "config: tiers[2].api_key_env: environment variable is not set"},
		{"api key env bad value", nil, map[string]string{"BIG_API_KEY": "has space"}, "config: tiers[2].api_key_env: environment variable must hold 1-4096 visible ASCII characters"},
		// direct tiers
		{"direct endpoint missing", []edit{del("tiers[2].endpoint")}, nil, "config: tiers[2].endpoint: is required"},
		{"direct host", []edit{set("tiers[2].host", "x")}, nil, "config: tiers[2].host: only allowed on replica tiers"},
		{"direct provenance", []edit{set("tiers[2].provenance", "x")}, nil, "config: tiers[2].provenance: only allowed on replica tiers"},
		{"direct strategy", []edit{set("tiers[2].replica_strategy", "round_robin")}, nil, "config: tiers[2].replica_strategy: only allowed on replica tiers"},
		{"direct capacity", []edit{set("tiers[2].replica_strategy", "capacity")}, nil, "config: tiers[2].replica_strategy: only allowed on replica tiers"},
		{"direct members", []edit{set("tiers[2].members", members("h", 2, 1))}, nil, "config: tiers[2].members: only allowed on replica tiers"},
		{"endpoint scheme", []edit{set("tiers[2].endpoint", "ftp://x")}, nil, "config: tiers[2].endpoint: must be an absolute http or https URL"},
		{"endpoint relative", []edit{set("tiers[2].endpoint", "/v1")}, nil, "config: tiers[2].endpoint: must be an absolute http or https URL"},
		{"endpoint no host", []edit{set("tiers[2].endpoint", "http:///v1")}, nil, "config: tiers[2].endpoint: must be an absolute http or https URL"},
		{"endpoint userinfo", []edit{set("tiers[2].endpoint", "https://u:p@api.example.com")}, nil, "config: tiers[2].endpoint: must not contain userinfo"},
		{"endpoint query", []edit{set("tiers[2].endpoint", "https://api.example.com/?a=1")}, nil, "config: tiers[2].endpoint: must not contain a query or fragment"},
		{"endpoint empty query", []edit{set("tiers[2].endpoint", "https://api.example.com/?")}, nil, "config: tiers[2].endpoint: must not contain a query or fragment"},
		{"endpoint fragment", []edit{set("tiers[2].endpoint", "https://api.example.com/#x")}, nil, "config: tiers[2].endpoint: must not contain a query or fragment"},
		{"endpoint bad host", []edit{set("tiers[2].endpoint", "http://bad_host")}, nil, "config: tiers[2].endpoint: must name a valid host"},
		{"endpoint numeric host", []edit{set("tiers[2].endpoint", "http://300.1.1.1")}, nil, "config: tiers[2].endpoint: must name a valid host"},
		{"endpoint zone", []edit{set("tiers[2].endpoint", "http://[fe80::1%25eth0]:80")}, nil, "config: tiers[2].endpoint: must name a valid host"},
		{"endpoint port zero", []edit{set("tiers[2].endpoint", "http://h:0")}, nil, "config: tiers[2].endpoint: must have a port 1-65535"},
		{"endpoint port big", []edit{set("tiers[2].endpoint", "http://h:70000")}, nil, "config: tiers[2].endpoint: must have a port 1-65535"},
		{"endpoint port empty", []edit{set("tiers[2].endpoint", "http://h:")}, nil, "config: tiers[2].endpoint: must have a port 1-65535"},
		{"endpoint port leading zero", []edit{set("tiers[2].endpoint", "http://h:080")}, nil, "config: tiers[2].endpoint: must have a port 1-65535"},
		{"endpoint dot segment", []edit{set("tiers[2].endpoint", "http://h/a/../b")}, nil, "config: tiers[2].endpoint: path must be slash-separated segments of A-Z a-z 0-9 . _ ~ -"},
		{"endpoint escaped path", []edit{set("tiers[2].endpoint", "http://h/a%2Fb")}, nil, "config: tiers[2].endpoint: path must be slash-separated segments of A-Z a-z 0-9 . _ ~ -"},
		{"endpoint double slash", []edit{set("tiers[2].endpoint", "http://h/a//b")}, nil, "config: tiers[2].endpoint: path must be slash-separated segments of A-Z a-z 0-9 . _ ~ -"},
		{"endpoint duplicate of member", []edit{set("tiers[2].endpoint", "http://127.0.0.1:9001/")}, nil, "config: tiers[2].endpoint: duplicate endpoint"},
		// replica tiers
		{"replica endpoint", []edit{set("tiers[0].endpoint", "http://127.0.0.1:1")}, nil, "config: tiers[0].endpoint: only allowed on direct tiers"},
		{"replica host missing", []edit{del("tiers[0].host")}, nil, "config: tiers[0].host: is required"},
		{"replica host with port", []edit{set("tiers[0].host", "127.0.0.1:80")}, nil, "config: tiers[0].host: must be a host name or IP address"},
		{"replica host url", []edit{set("tiers[0].host", "http://h")}, nil, "config: tiers[0].host: must be a host name or IP address"},
		{"provenance missing", []edit{del("tiers[0].provenance")}, nil, "config: tiers[0].provenance: is required"},
		{"provenance padded", []edit{set("tiers[0].provenance", " x")}, nil, "config: tiers[0].provenance: must be 1-256 printable ASCII characters without leading or trailing spaces"},
		{"provenance newline", []edit{set("tiers[0].provenance", "a\nb")}, nil, "config: tiers[0].provenance: must be 1-256 printable ASCII characters without leading or trailing spaces"},
		{"strategy bad", []edit{set("tiers[0].replica_strategy", "least_loaded")}, nil, "config: tiers[0].replica_strategy: must be round_robin or capacity"},
		{"engine bad", []edit{set("tiers[0].engine", "ollama")}, nil, "config: tiers[0].engine: must be one of vllm, sglang, trtllm, llamacpp, tgi"},
		{"engine case", []edit{set("tiers[0].engine", "SGLang")}, nil, "config: tiers[0].engine: must be one of vllm, sglang, trtllm, llamacpp, tgi"},
		{"engine empty", []edit{set("tiers[0].engine", "")}, nil, "config: tiers[0].engine: must be one of vllm, sglang, trtllm, llamacpp, tgi"},
		{"direct engine", []edit{set("tiers[2].engine", "vllm")}, nil, "config: tiers[2].engine: only allowed on replica tiers"},
		{"direct passive health", []edit{set("tiers[2].passive_health", map[string]any{"enabled": true})}, nil, "config: tiers[2].passive_health: only allowed on replica tiers"},
		{"passive health zero failures", []edit{set("tiers[0].passive_health", map[string]any{"consecutive_failures": 0})}, nil, "config: tiers[0].passive_health.consecutive_failures: must be 1-1000"},
		{"passive health base too short", []edit{set("tiers[0].passive_health", map[string]any{"base_ejection": "50ms"})}, nil, "config: tiers[0].passive_health.base_ejection: must be 100ms-1h"},
		{"passive health max below base", []edit{set("tiers[0].passive_health", map[string]any{"base_ejection": "1m", "max_ejection": "30s"})}, nil, "config: tiers[0].passive_health.max_ejection: must not be below base_ejection"},
		{"passive health percent", []edit{set("tiers[0].passive_health", map[string]any{"max_ejected_percent": 101})}, nil, "config: tiers[0].passive_health.max_ejected_percent: must be 0-100"},
		{"queue without max_waiting", []edit{set("tiers[0].queue", map[string]any{"timeout": "2s"})}, nil, "config: tiers[0].queue.max_waiting: is required"},
		{"queue without timeout", []edit{set("tiers[2].queue", map[string]any{"max_waiting": 4})}, nil, "config: tiers[2].queue.timeout: is required"},
		{"queue zero", []edit{set("tiers[0].queue", map[string]any{"max_waiting": 0, "timeout": "2s"})}, nil, "config: tiers[0].queue.max_waiting: must be 1-100000"},
		{"queue timeout short", []edit{set("tiers[0].queue", map[string]any{"max_waiting": 4, "timeout": "5ms"})}, nil, "config: tiers[0].queue.timeout: must be 10ms-10m"},
		{"passive health unknown key", []edit{set("tiers[0].passive_health", map[string]any{"enable": true})}, nil, "config: tiers[0].passive_health.enable: unknown key"},
		{"one member", []edit{set("tiers[0].members", members("127.0.0.1", 1, 1))}, nil, "config: tiers[0].members: must have 2-16 members"},
		{"seventeen members", []edit{set("tiers[0].members", members("127.0.0.1", 17, 1))}, nil, "config: tiers[0].members: must have 2-16 members"},
		{"members absent", []edit{del("tiers[0].members")}, nil, "config: tiers[0].members: must have 2-16 members"},
		{"member id missing", []edit{del("tiers[0].members[1].id")}, nil, "config: tiers[0].members[1].id: is required"},
		{"member id grammar", []edit{set("tiers[0].members[1].id", "-m")}, nil, "config: tiers[0].members[1].id: must match [a-z0-9][a-z0-9._-]{0,63}"},
		{"member id duplicate", []edit{set("tiers[0].members[1].id", "m0")}, nil, "config: tiers[0].members[1].id: duplicate member id"},
		{"member endpoint missing", []edit{del("tiers[0].members[0].endpoint")}, nil, "config: tiers[0].members[0].endpoint: is required"},
		{"member endpoint bad", []edit{set("tiers[0].members[0].endpoint", "127.0.0.1:9001")}, nil, "config: tiers[0].members[0].endpoint: must be an absolute http or https URL"},
		{"member endpoint duplicate", []edit{set("tiers[0].members[1].endpoint", "http://127.0.0.1:9001/")}, nil, "config: tiers[0].members[1].endpoint: duplicate endpoint"},
		{"member endpoint duplicate default port", []edit{set("tiers[1].members[0].endpoint", "http://gpu-box.local:80"), set("tiers[1].members[1].endpoint", "http://gpu-box.local")}, nil, "config: tiers[1].members[1].endpoint: duplicate endpoint"},
		{"member endpoint across tiers", []edit{set("tiers[1].host", "127.0.0.1"), set("tiers[1].members[0].endpoint", "http://127.0.0.1:9002")}, nil, "config: tiers[1].members[0].endpoint: duplicate endpoint"},
		{"member off host", []edit{set("tiers[0].members[1].endpoint", "http://127.0.0.2:9002")}, nil, "config: tiers[0].members[1].endpoint: host must equal the tier host"},
		{"member localhost vs ip", []edit{set("tiers[0].members[1].endpoint", "http://localhost:9002")}, nil, "config: tiers[0].members[1].endpoint: host must equal the tier host"},
		{"member ceiling zero", []edit{set("tiers[0].members[1].max_concurrency", 0)}, nil, "config: tiers[0].members[1].max_concurrency: must be 1-100000"},
		{"member ceiling big", []edit{set("tiers[1].members[1].max_concurrency", 100001)}, nil, "config: tiers[1].members[1].max_concurrency: must be 1-100000"},
		{"member ceiling negative", []edit{set("tiers[1].members[1].max_concurrency", -1)}, nil, "config: tiers[1].members[1].max_concurrency: must be 1-100000"},
		{"capacity needs ceilings", []edit{del("tiers[0].members[1].max_concurrency")}, nil, "config: tiers[0].members[1].max_concurrency: is required in capacity mode"},
		{"capacity on rr tier needs ceilings", []edit{set("tiers[1].replica_strategy", "capacity")}, nil, "config: tiers[1].members[0].max_concurrency: is required in capacity mode"},
		{"tier ceiling over sum", []edit{set("tiers[0].max_concurrency", 11)}, nil, "config: tiers[0].max_concurrency: must not exceed the sum of member max_concurrency"},
		{"rr tier ceiling over full sum", []edit{set("tiers[1].members[0].max_concurrency", 1), set("tiers[1].max_concurrency", 4)}, nil, "config: tiers[1].max_concurrency: must not exceed the sum of member max_concurrency"},
		{"capacity members over 256", []edit{set("tiers", capacityTiers(17))}, nil, "config: tiers: at most 256 members across capacity tiers"},
		{"too many tiers", []edit{set("tiers", directTiers(257))}, nil, "config: tiers: at most 256 tiers"},
		// aliases
		{"no aliases", []edit{set("aliases", []any{})}, nil, "config: aliases: at least one alias is required"},
		{"alias id missing", []edit{del("aliases[1].id")}, nil, "config: aliases[1].id: is required"},
		{"alias id upper", []edit{set("aliases[1].id", "Chat")}, nil, "config: aliases[1].id: must match [a-z0-9][a-z0-9._:/-]{0,127}"},
		{"alias id leading slash", []edit{set("aliases[1].id", "/chat")}, nil, "config: aliases[1].id: must match [a-z0-9][a-z0-9._:/-]{0,127}"},
		{"alias duplicate", []edit{set("aliases[2].id", "chat")}, nil, "config: aliases[2].id: duplicate alias"},
		{"alias tier missing", []edit{del("aliases[0].tier")}, nil, "config: aliases[0].tier: is required"},
		{"alias tier unknown", []edit{set("aliases[0].tier", "nope")}, nil, "config: aliases[0].tier: unknown tier"},
		{"too many aliases", []edit{set("aliases", manyAliases(1025))}, nil, "config: aliases: at most 1024 aliases"},
		// auth
		{"no caller tokens", []edit{del("auth.caller_tokens")}, nil, "config: auth: at least one caller token is required (caller_tokens, caller_tokens_file, callers or ANVIL_API_TOKENS)"},
		{"auth absent", []edit{del("auth")}, nil, "config: auth: at least one caller token is required (caller_tokens, caller_tokens_file, callers or ANVIL_API_TOKENS)"},
		{"caller tokens exclusive", []edit{set("auth.caller_tokens_file", "/t")}, nil, "config: auth: caller_tokens and caller_tokens_file are mutually exclusive"},
		{"admin exclusive", []edit{set("auth.admin_token_file", "/t")}, nil, "config: auth: admin_token and admin_token_file are mutually exclusive"},
		{"caller token short", []edit{set("auth.caller_tokens", []any{"short-SECRET"})}, nil, "config: auth.caller_tokens[0]: " + tokenRule},
		{"caller token space", []edit{set("auth.caller_tokens", []any{callerTok, "space SECRET aaaaaaaaaaaa"})}, nil, "config: auth.caller_tokens[1]: " + tokenRule},
		{"caller token inner equals", []edit{set("auth.caller_tokens", []any{"SECRET=aaaaaaaaaaaaaaaaaaaaa"})}, nil, "config: auth.caller_tokens[0]: " + tokenRule},
		{"caller token long", []edit{set("auth.caller_tokens", []any{strings.Repeat("S", 513)})}, nil, "config: auth.caller_tokens[0]: " + tokenRule},
		{"caller token duplicate", []edit{set("auth.caller_tokens", []any{callerTok, callerTok})}, nil, "config: auth.caller_tokens[1]: duplicate token"},
		{"caller token count", []edit{set("auth.caller_tokens", manyTokens(1025))}, nil, "config: auth: at most 1024 caller tokens"},
		{"admin token bad", []edit{set("auth.admin_token", "SECRET")}, nil, "config: auth.admin_token: " + tokenRule},
		{"admin equals caller", []edit{set("auth.admin_token", callerTok)}, nil, "config: auth.admin_token: must differ from every caller token"},
		{"token file without the loader", []edit{del("auth.caller_tokens"), set("auth.caller_tokens_file", "/etc/anvil/tokens")}, nil, "config: auth.caller_tokens_file: token files are read only by the loader"},
		// roles (issue 27)
		{"observer exclusive", []edit{set("auth.observer_tokens", []any{observerTok}), set("auth.observer_tokens_file", "/t")}, nil, "config: auth: observer_tokens and observer_tokens_file are mutually exclusive"},
		{"observer token bad", []edit{set("auth.observer_tokens", []any{"SECRET"})}, nil, "config: auth.observer_tokens[0]: " + tokenRule},
		{"observer token duplicate", []edit{set("auth.observer_tokens", []any{observerTok, observerTok})}, nil, "config: auth.observer_tokens[1]: duplicate token"},
		{"observer equals caller", []edit{set("auth.observer_tokens", []any{observerTok, callerTok})}, nil, "config: auth.observer_tokens[1]: must differ from every caller token"},
		{"observer equals admin", []edit{set("auth.observer_tokens", []any{adminTok})}, nil, "config: auth.admin_token: must differ from every observer token"},
		{"observer env equals caller", nil, map[string]string{config.EnvObserverTokens: observerTok + "," + callerTok}, "config: ANVIL_OBSERVER_TOKENS[1]: must differ from every caller token"},
		{"label missing", []edit{set("auth.callers", []any{map[string]any{"token": labelTok}})}, nil, "config: auth.callers[0].label: is required"},
		{"label grammar", []edit{set("auth.callers", []any{map[string]any{"label": "Team A", "token": labelTok}})}, nil, "config: auth.callers[0].label: " + labelRule},
		{"label address", []edit{set("auth.callers", []any{map[string]any{"label": "10.0.0.1", "token": labelTok}})}, nil, "config: auth.callers[0].label: " + labelRule},
		{"label reserved position", []edit{set("auth.callers", []any{map[string]any{"label": "caller-1", "token": labelTok}})}, nil, "config: auth.callers[0].label: " + labelRule},
		{"label reserved other", []edit{set("auth.callers", []any{map[string]any{"label": "other", "token": labelTok}})}, nil, "config: auth.callers[0].label: " + labelRule},
		{"label duplicate", []edit{set("auth.callers", []any{map[string]any{"label": "team-a", "token": labelTok}, map[string]any{"label": "team-a", "token": labelTok2}})}, nil, "config: auth.callers[1].label: duplicate label"},
		{"label on no token", []edit{set("auth.callers", []any{map[string]any{"label": "team-a"}})}, nil, "config: auth.callers[0]: needs exactly one of token_file, token_env or token"},
		{"label on two sources", []edit{set("auth.callers", []any{map[string]any{"label": "team-a", "token": labelTok, "token_env": "TEAM_A"}})}, nil, "config: auth.callers[0]: needs exactly one of token_file, token_env or token"},
		{"labelled token bad", []edit{set("auth.callers", []any{map[string]any{"label": "team-a", "token": "SECRET"}})}, nil, "config: auth.callers[0].token: " + tokenRule},
		{"labelled token env unset", []edit{set("auth.callers", []any{map[string]any{"label": "team-a", "token_env": "TEAM_A_TOKEN"}})}, nil, "config: auth.callers[0].token_env: environment variable is not set"},
		{"labelled token env name", []edit{set("auth.callers", []any{map[string]any{"label": "team-a", "token_env": "team-a"}})}, nil, "config: auth.callers[0].token_env: " + envNameRule},
		{"labelled token env bad", []edit{set("auth.callers", []any{map[string]any{"label": "team-a", "token_env": "TEAM_A_TOKEN"}})}, map[string]string{"TEAM_A_TOKEN": "SECRET"}, "config: auth.callers[0].token_env: " + tokenRule},
		{"labelled token file without the loader", []edit{set("auth.callers", []any{map[string]any{"label": "team-a", "token_file": "/t"}})}, nil, "config: auth.callers[0].token_file: token files are read only by the loader"},
		{"labelled equals caller", []edit{set("auth.callers", []any{map[string]any{"label": "team-a", "token": callerTok}})}, nil, "config: auth.callers[0]: duplicate token (already a caller token)"},
		{"labelled equals labelled", []edit{set("auth.callers", []any{map[string]any{"label": "team-a", "token": labelTok}, map[string]any{"label": "team-b", "token": labelTok}})}, nil, "config: auth.callers[1]: duplicate token (already a caller token)"},
		{"labelled equals admin", []edit{set("auth.callers", []any{map[string]any{"label": "team-a", "token": adminTok}})}, nil, "config: auth.admin_token: must differ from every caller token"},
		{"labelled equals observer", []edit{set("auth.observer_tokens", []any{labelTok}), set("auth.callers", []any{map[string]any{"label": "team-a", "token": labelTok}})}, nil, "config: auth.observer_tokens[0]: must differ from every caller token"},
		{"too many labelled callers", []edit{set("auth.callers", manyCallers(65))}, nil, "config: auth.callers: at most 64 labelled callers"},
		{"upstream key is a caller token", []edit{set("auth.callers", []any{map[string]any{"label": "team-a", "token_env": "BIG_API_KEY"}})}, map[string]string{"BIG_API_KEY": labelTok}, "config: tiers[2].api_key_env: must not hold a router token"},
		{"observer variable forwarded", []edit{set("tiers[2].api_key_env", config.EnvObserverTokens)}, nil, "config: tiers[2].api_key_env: must not name a router token variable"},
		{"token file empty path", []edit{del("auth.caller_tokens"), set("auth.caller_tokens_file", "")}, nil, "config: auth.caller_tokens_file: must be a file path of 1-4096 characters without control characters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := loadDoc(t, baseDoc)
			for _, e := range tc.edits {
				e(t, d)
			}
			env := baseEnv()
			for k, v := range tc.env {
				env[k] = v
			}
			_, err := Parse(d.bytes(t), envMap(env))
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.True(t, errors.Is(err, config.ErrInvalid), "errors.Is(config.ErrInvalid)")
			assert.NotContains(t, err.Error(), "SECRET", "error echoes a secret")
			var ce *config.Error
			require.True(t, errors.As(err, &ce))
			assert.Equal(t, tc.want, "config: "+pathPrefix(ce.Path)+ce.Msg)
		})
	}
}

func pathPrefix(p string) string {
	if p == "" {
		return ""
	}
	return p + ": "
}

// capacityTiers returns n capacity tiers of 16 members each.
func capacityTiers(n int) []any {
	out := make([]any, n)
	for i := range n {
		host := "h" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + ".example"
		out[i] = map[string]any{
			"id": "t" + string(rune('a'+i%26)) + strings.Repeat("x", i/26), "kind": "replica", "served_model": "m",
			"gates": map[string]any{"max_context_tokens": 10}, "host": host, "provenance": "p",
			"replica_strategy": "capacity", "members": members(host, 16, 1),
		}
	}
	return out
}

func directTiers(n int) []any {
	out := make([]any, n)
	for i := range n {
		id := "d" + strings.Repeat("x", i/10) + string(rune('0'+i%10))
		out[i] = map[string]any{
			"id": id, "kind": "direct", "served_model": "m",
			"gates": map[string]any{"max_context_tokens": 10}, "endpoint": "http://" + id + ".example",
		}
	}
	return out
}

func manyAliases(n int) []any {
	out := make([]any, n)
	for i := range n {
		out[i] = map[string]any{"id": "a" + strings.Repeat("x", i/10) + string(rune('0'+i%10)), "tier": "fast"}
	}
	return out
}

func manyTokens(n int) []any {
	out := make([]any, n)
	for i := range n {
		out[i] = "tok-aaaaaaaaaaaaaaaa-" + strings.Repeat("x", i/10) + string(rune('0'+i%10))
	}
	return out
}
