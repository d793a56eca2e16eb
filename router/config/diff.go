package config

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// The operations a Change names.
const (
	OpAdded     = "added"
	OpRemoved   = "removed"
	OpChanged   = "changed"
	OpReordered = "reordered"
)

// unset is how a Change shows a ceiling that is absent (0 in the Config).
const unset = "unset"

// Change is one difference between two configurations. Path names the setting the way the file
// spells it, list entries by their ID instead of their index (tiers.chat.members.vllm-0.max_concurrency,
// aliases.gpt), because an index means nothing once entries are added or removed. From and To are set
// only for numbers, durations, booleans, enums and IDs; every other value (a token, an endpoint URL, a
// host, a file path, a served model name) is opaque and only said to have changed, so a change list
// is safe to log and to return to an admin client.
type Change struct {
	Path string `json:"path"`
	Op   string `json:"op"` // OpAdded, OpRemoved, OpChanged or OpReordered
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// String renders "PATH: FROM -> TO" for a shown value, else "PATH: OP".
func (c Change) String() string {
	if c.From != "" || c.To != "" {
		return c.Path + ": " + c.From + " -> " + c.To
	}
	return c.Path + ": " + c.Op
}

// Diff lists every difference from old to next, in a fixed order: the settings in the order of the
// schema, then aliases, then tiers; within a list, entries changed or added in next's order, then
// entries removed in old's order, then "reordered" when the entries both hold appear in another order.
// Equal configurations give an empty list. Diff never reveals a credential, an endpoint or a path.
func Diff(old, next Config) []Change {
	var d differ
	d.settings(old, next)
	d.auth(old.auth, next.auth)
	d.aliases(old.aliases, next.aliases)
	d.tiers(old.tiers, next.tiers)
	return d.out
}

type differ struct{ out []Change }

func (d *differ) add(path, op, from, to string) {
	d.out = append(d.out, Change{Path: path, Op: op, From: from, To: to})
}

func (d *differ) shown(path, a, b string) {
	if a != b {
		d.add(path, OpChanged, a, b)
	}
}

func (d *differ) num(path string, a, b int64) {
	d.shown(path, strconv.FormatInt(a, 10), strconv.FormatInt(b, 10))
}

// ceiling is num for a setting whose 0 means "absent".
func (d *differ) ceiling(path string, a, b int64) {
	show := func(v int64) string {
		if v == 0 {
			return unset
		}
		return strconv.FormatInt(v, 10)
	}
	d.shown(path, show(a), show(b))
}

func (d *differ) dur(path string, a, b time.Duration) { d.shown(path, fmtDuration(a), fmtDuration(b)) }

func (d *differ) flag(path string, a, b bool) {
	d.shown(path, strconv.FormatBool(a), strconv.FormatBool(b))
}

// presence reports an optional setting appearing or disappearing and whether both hold one.
func (d *differ) presence(path string, a, b bool) bool {
	switch {
	case a && !b:
		d.add(path, OpRemoved, "", "")
	case !a && b:
		d.add(path, OpAdded, "", "")
	}
	return a && b
}

// opaque reports a change of a value that is never shown; "" means absent.
func (d *differ) opaque(path, a, b string) {
	if d.presence(path, a != "", b != "") && a != b {
		d.add(path, OpChanged, "", "")
	}
}

func (d *differ) settings(o, n Config) {
	d.opaque("listen", o.listen, n.listen)
	if d.presence("tls", o.tls.Enabled(), n.tls.Enabled()) {
		d.opaque("tls.cert_file", o.tls.CertFile, n.tls.CertFile)
		d.opaque("tls.key_file", o.tls.KeyFile, n.tls.KeyFile)
	}
	d.num("limits.max_body_bytes", o.limits.MaxBodyBytes, n.limits.MaxBodyBytes)
	d.num("limits.max_inflight_body_bytes", o.limits.MaxInflightBodyBytes, n.limits.MaxInflightBodyBytes)
	d.num("limits.max_audio_bytes", o.limits.MaxAudioBytes, n.limits.MaxAudioBytes)
	d.num("limits.max_spill_bytes", o.limits.MaxSpillBytes, n.limits.MaxSpillBytes)
	d.num("limits.caller_body_share_percent", o.limits.CallerBodySharePercent, n.limits.CallerBodySharePercent)
	d.num("limits.min_upload_bytes_per_second", o.limits.MinUploadBytesPerSecond, n.limits.MinUploadBytesPerSecond)
	d.dur("limits.min_upload_grace", o.limits.MinUploadGrace, n.limits.MinUploadGrace)
	d.dur("upstream.connect_timeout", o.upstream.ConnectTimeout, n.upstream.ConnectTimeout)
	d.dur("upstream.first_byte_timeout", o.upstream.FirstByteTimeout, n.upstream.FirstByteTimeout)
	d.dur("upstream.timeout", o.upstream.Timeout, n.upstream.Timeout)
	d.num("upstream.max_response_bytes", o.upstream.MaxResponseBytes, n.upstream.MaxResponseBytes)
	d.dur("shutdown_grace", o.shutdownGrace, n.shutdownGrace)
	d.shown("log.format", o.log.Format, n.log.Format)
	d.shown("log.level", o.log.Level, n.log.Level)
	d.num("decision_log.ring_size", int64(o.decisionLog.RingSize), int64(n.decisionLog.RingSize))
	d.opaque("decision_log.jsonl_path", o.decisionLog.JSONLPath, n.decisionLog.JSONLPath)
	d.num("decision_log.max_line_bytes", int64(o.decisionLog.MaxLineBytes), int64(n.decisionLog.MaxLineBytes))
	d.dur("decision_log.unready_after", o.decisionLog.UnreadyAfter, n.decisionLog.UnreadyAfter)
	d.opaque("intent_file", o.intentFile, n.intentFile)
	d.dur("readiness.interval", o.readiness.Interval, n.readiness.Interval)
	d.dur("readiness.timeout", o.readiness.Timeout, n.readiness.Timeout)
	d.opaque("metrics.listen", o.metrics.Listen, n.metrics.Listen)
	d.tracing(o.tracing, n.tracing)
	d.ceiling("runtime.gc_percent", int64(o.runtime.GCPercent), int64(n.runtime.GCPercent))
	d.ceiling("runtime.memory_limit_bytes", o.runtime.MemoryLimitBytes, n.runtime.MemoryLimitBytes)
	d.num("runtime.memory_limit_percent", int64(o.runtime.MemoryLimitPercent), int64(n.runtime.MemoryLimitPercent))
}

// tracing names the tracing settings that changed; the endpoint is opaque, like every address.
func (d *differ) tracing(o, n Tracing) {
	d.opaque("tracing.endpoint", o.Endpoint, n.Endpoint)
	d.shown("tracing.protocol", o.Protocol, n.Protocol)
	d.shown("tracing.service_name", o.ServiceName, n.ServiceName)
	d.shown("tracing.sampler", o.Sampler, n.Sampler)
	if o.SamplerArg != n.SamplerArg {
		d.add("tracing.sampler_arg", OpChanged, strconv.FormatFloat(o.SamplerArg, 'g', -1, 64),
			strconv.FormatFloat(n.SamplerArg, 'g', -1, 64))
	}
	if !slices.Equal(o.ResourceAttributes, n.ResourceAttributes) {
		d.add("tracing.resource_attributes", OpChanged, "", "")
	}
}

// auth names credential changes by the key that supplies them; the file a credential came from is a
// setting of its own, so a token file renamed with the same tokens inside still shows.
func (d *differ) auth(o, n authConfig) {
	d.opaque("auth.caller_tokens_file", fileOf(o.callerSource), fileOf(n.callerSource))
	if !slices.Equal(o.callerTokens, n.callerTokens) {
		d.add("auth.caller_tokens", OpChanged, "", "")
	}
	d.opaque("auth.admin_token_file", fileOf(o.adminSource), fileOf(n.adminSource))
	d.opaque("auth.admin_token", o.adminToken.value, n.adminToken.value)
	d.opaque("auth.observer_tokens_file", fileOf(o.observerSource), fileOf(n.observerSource))
	if !slices.Equal(o.observerTokens, n.observerTokens) {
		d.add("auth.observer_tokens", OpChanged, "", "")
	}
	keyed(d, "auth.callers", o.callers, n.callers, func(c labelledCaller) string { return c.label },
		func(path string, a, b labelledCaller) {
			d.opaque(path+".token_file", fileOf(a.source), fileOf(b.source))
			d.opaque(path+".token_env", envOf(a.source), envOf(b.source))
			d.opaque(path+".token", a.token.value, b.token.value)
		})
}

// envOf is the variable a labelled caller's token source names ("environment VAR"), or "".
func envOf(source string) string {
	name, _ := strings.CutPrefix(source, "environment ")
	if name == source {
		return ""
	}
	return name
}

// fileOf is the token file a credential source names ("file PATH"), or "".
func fileOf(source string) string {
	name, _ := strings.CutPrefix(source, "file ")
	if name == source {
		return ""
	}
	return name
}

func (d *differ) aliases(o, n []Alias) {
	keyed(d, "aliases", o, n, func(a Alias) string { return a.ID }, func(path string, a, b Alias) {
		d.shown(path+".tier", a.Tier, b.Tier)
	})
}

func (d *differ) tiers(o, n []Tier) {
	keyed(d, "tiers", o, n, func(t Tier) string { return t.ID }, d.tier)
}

func (d *differ) tier(p string, o, n Tier) {
	d.shown(p+".kind", string(o.Kind), string(n.Kind))
	d.opaque(p+".served_model", o.ServedModel, n.ServedModel)
	d.num(p+".gates.max_context_tokens", o.Gates.MaxContextTokens, n.Gates.MaxContextTokens)
	d.num(p+".gates.max_output_tokens", o.Gates.MaxOutputTokens, n.Gates.MaxOutputTokens)
	d.flag(p+".gates.tools_allowed", o.Gates.ToolsAllowed, n.Gates.ToolsAllowed)
	d.flag(p+".gates.media_allowed", o.Gates.MediaAllowed, n.Gates.MediaAllowed)
	d.ceiling(p+".max_concurrency", o.MaxConcurrency, n.MaxConcurrency)
	d.opaque(p+".endpoint", o.Endpoint, n.Endpoint)
	// The key is the variable's value: a changed value under the same name is a changed setting too.
	if d.presence(p+".api_key_env", o.APIKeyEnv != "", n.APIKeyEnv != "") && (o.APIKeyEnv != n.APIKeyEnv || o.APIKey != n.APIKey) {
		d.add(p+".api_key_env", OpChanged, "", "")
	}
	d.opaque(p+".host", o.Host, n.Host)
	d.opaque(p+".provenance", o.Provenance, n.Provenance)
	d.shown(p+".replica_strategy", string(o.Strategy), string(n.Strategy))
	d.shown(p+".engine", o.Engine, n.Engine)
	if d.presence(p+".queue", o.Queue.MaxWaiting > 0, n.Queue.MaxWaiting > 0) {
		d.num(p+".queue.max_waiting", int64(o.Queue.MaxWaiting), int64(n.Queue.MaxWaiting))
		d.dur(p+".queue.timeout", o.Queue.Timeout, n.Queue.Timeout)
	}
	if d.presence(p+".passive_health", o.Kind == KindReplica, n.Kind == KindReplica) {
		oh, nh := o.PassiveHealth, n.PassiveHealth
		d.flag(p+".passive_health.enabled", oh.Enabled, nh.Enabled)
		d.num(p+".passive_health.consecutive_failures", int64(oh.ConsecutiveFailures), int64(nh.ConsecutiveFailures))
		d.dur(p+".passive_health.base_ejection", oh.BaseEjection, nh.BaseEjection)
		d.dur(p+".passive_health.max_ejection", oh.MaxEjection, nh.MaxEjection)
		d.num(p+".passive_health.max_ejected_percent", int64(oh.MaxEjectedPercent), int64(nh.MaxEjectedPercent))
		d.flag(p+".passive_health.count_429", oh.Count429, nh.Count429)
	}
	keyed(d, p+".members", o.Members, n.Members, func(m Member) string { return m.ID }, func(mp string, a, b Member) {
		d.opaque(mp+".endpoint", a.Endpoint, b.Endpoint)
		d.ceiling(mp+".max_concurrency", a.MaxConcurrency, b.MaxConcurrency)
	})
}

// keyed diffs two lists of entries with unique IDs: entries changed or added in n's order, those
// removed in o's order, then one "reordered" line when the shared entries changed places.
func keyed[T any](d *differ, path string, o, n []T, id func(T) string, entry func(path string, a, b T)) {
	old := make(map[string]int, len(o))
	for i, e := range o {
		old[id(e)] = i
	}
	kept := make(map[string]bool, len(n))
	var sharedOld, sharedNew []string
	for _, e := range n {
		key := id(e)
		kept[key] = true
		i, ok := old[key]
		if !ok {
			d.add(path+"."+key, OpAdded, "", "")
			continue
		}
		sharedNew = append(sharedNew, key)
		entry(path+"."+key, o[i], e)
	}
	for _, e := range o {
		if key := id(e); !kept[key] {
			d.add(path+"."+key, OpRemoved, "", "")
		} else {
			sharedOld = append(sharedOld, key)
		}
	}
	if !slices.Equal(sharedOld, sharedNew) {
		d.add(path, OpReordered, "", "")
	}
}
