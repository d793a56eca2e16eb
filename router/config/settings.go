package config

import (
	"strings"
	"time"

	"github.com/anvil-llm/anvil/internal/gctune"
	"github.com/anvil-llm/anvil/router/ident"
)

// Defaults and bounds of the scalar settings. CONFIGURATION.md lists the
// same numbers; TestDocumentedDefaults keeps the two honest.
const (
	DefaultListen = "127.0.0.1:8080"

	defaultMaxBodyBytes, minMaxBodyBytes, maxMaxBodyBytes = 1 << 20, 1 << 10, 64 << 20
	// The in-flight budget is a fixed amount of memory, independent of the body limit (whose largest
	// value it equals, so the default always admits a largest body): 64 MiB parses 64 bodies of 1 MiB
	// at once, or thousands of ordinary chat bodies.
	defaultMaxInflightBodyBytes, maxMaxInflightBodyBytes = 64 << 20, 8 << 30
	// A 25 MiB file (OpenAI's and vLLM's bound of one audio file) and the rest of its form.
	defaultMaxAudioBytes, minMaxAudioBytes, maxMaxAudioBytes = 26 << 20, 1 << 10, 1 << 30
	// The disk held audio files may use together: 1 GiB holds about 40 largest uploads at once.
	defaultMaxSpillBytes, minMaxSpillBytes, maxMaxSpillBytes = 1 << 30, 0, 1 << 40
	// MinSpillBytes is the least limits.max_spill_bytes other than 0: one spool.SpillStep, the unit
	// the spill budget is reserved in.
	MinSpillBytes = 1 << 20
	// The fair body budget. One caller holds at most a quarter of the in-flight budget, so one
	// caller's slow bodies cannot starve the others. A body must arrive at 16 KiB/s on average after
	// a 10 s grace: far below any uplink that can send a 25 MiB audio file within upstream.timeout
	// (10 min needs 43.7 KiB/s), so the rule never refuses an upload the timeout would let through,
	// and a stalled body gives its share back after about 10 s instead of the 1 min read timeout.
	defaultCallerBodyShare, minCallerBodyShare, maxCallerBodyShare = 25, 0, 100
	defaultMinUploadRate, minMinUploadRate, maxMinUploadRate       = 16 << 10, 0, 1 << 30
	defaultMinUploadGrace, minMinUploadGrace, maxMinUploadGrace    = 10 * time.Second, time.Second, 10 * time.Minute

	defaultConnectTimeout, minConnectTimeout, maxConnectTimeout       = 5 * time.Second, 100 * time.Millisecond, time.Minute
	defaultFirstByteTimeout, minFirstByteTimeout, maxFirstByteTimeout = 2 * time.Minute, time.Second, time.Hour
	defaultTimeout, minTimeout, maxTimeout                            = 10 * time.Minute, time.Second, 24 * time.Hour
	defaultMaxResponse, minMaxResponse, maxMaxResponse                = 32 << 20, 1 << 10, 1 << 30

	defaultShutdownGrace, minShutdownGrace, maxShutdownGrace = 30 * time.Second, 0, 10 * time.Minute

	defaultRingSize, minRingSize, maxRingSize             = 1024, 1, 100000
	defaultUnreadyAfter, minUnreadyAfter, maxUnreadyAfter = 0, 0, 24 * time.Hour
	defaultMaxLineBytes, minMaxLineBytes, maxMaxLineBytes = ident.MaxLineBytes, ident.MinLineBytes, ident.MaxLineBytes

	defaultReadinessInterval, minReadinessInterval, maxReadinessInterval = 2 * time.Second, 100 * time.Millisecond, time.Minute
	defaultReadinessTimeout, minReadinessTimeout, maxReadinessTimeout    = time.Second, 100 * time.Millisecond, 30 * time.Second

	// The collector: at least GOGC=10 (more often is all cost) and at most 10000 (a heap of a hundred
	// times the live one); a soft limit of at least 32 MiB, below which the router's own base does
	// not fit, and at most 1 PiB.
	minGCPercent, maxGCPercent                                              = 10, 10000
	minMemoryLimitBytes, maxMemoryLimitBytes                                = gctune.MinMemoryLimit, 1 << 50
	defaultMemoryLimitPercent, minMemoryLimitPercent, maxMemoryLimitPercent = gctune.DefaultMemoryLimitPercent, 10, 100
)

// buildSettings validates everything except tiers, aliases and auth, reporting each section's first
// error.
func buildSettings(raw Document, lookup func(string) (string, bool), c *Config) []error {
	steps := []func() error{
		func() error { return buildListen(raw.Listen, lookup, c) },
		func() error { return buildTLS(raw.TLS, c) },
		func() error { return buildLimits(raw.Limits, c) },
		func() error { return buildUpstream(raw.Upstream, c) },
		func() (err error) {
			c.shutdownGrace, err = durIn(raw.ShutdownGrace, defaultShutdownGrace, minShutdownGrace, maxShutdownGrace, "shutdown_grace")
			return err
		},
		func() error { return buildLog(raw.Log, c) },
		func() error { return buildDecisionLog(raw.DecisionLog, c) },
		func() (err error) { c.intentFile, err = optPath(raw.IntentFile, "intent_file"); return err },
		func() error { return buildReadiness(raw.Readiness, c) },
		func() error { return buildMetrics(raw.Metrics, c) },
		func() error { return buildTracing(raw.Tracing, lookup, c) },
		func() error { return buildRuntime(raw.Runtime, c) },
	}
	var errs []error // each section's first error: the sections are independent
	for _, step := range steps {
		if err := step(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func buildListen(p *string, lookup func(string) (string, bool), c *Config) error {
	path := "listen"
	c.listen = DefaultListen
	if p != nil {
		c.listen = *p
	}
	if v, ok := lookup(EnvListen); ok && v != "" {
		c.listen, path = v, EnvListen
	}
	if !validListen(c.listen) {
		return invalid(path, "must be host:port with a port 0-65535")
	}
	return nil
}

func buildTLS(r *TLSDoc, c *Config) error {
	if r == nil || (r.CertFile == nil && r.KeyFile == nil) {
		return nil
	}
	if r.CertFile == nil || r.KeyFile == nil {
		return invalid("tls", "cert_file and key_file must be set together")
	}
	var err error
	if c.tls.CertFile, err = optPath(r.CertFile, "tls.cert_file"); err != nil {
		return err
	}
	c.tls.KeyFile, err = optPath(r.KeyFile, "tls.key_file")
	return err
}

func buildLimits(r *LimitsDoc, c *Config) (err error) {
	if r == nil {
		r = &LimitsDoc{}
	}
	if c.limits.MaxBodyBytes, err = intIn(r.MaxBodyBytes, defaultMaxBodyBytes, minMaxBodyBytes, maxMaxBodyBytes, "limits.max_body_bytes"); err != nil {
		return err
	}
	// One largest body must fit in the budget, or it could never be read.
	c.limits.MaxInflightBodyBytes, err = intIn(r.MaxInflightBodyBytes, max(defaultMaxInflightBodyBytes, c.limits.MaxBodyBytes),
		c.limits.MaxBodyBytes, maxMaxInflightBodyBytes, "limits.max_inflight_body_bytes")
	if err != nil {
		return err
	}
	c.limits.MaxAudioBytes, err = intIn(r.MaxAudioBytes, defaultMaxAudioBytes, minMaxAudioBytes, maxMaxAudioBytes, "limits.max_audio_bytes")
	if err != nil {
		return err
	}
	c.limits.MaxSpillBytes, err = intIn(r.MaxSpillBytes, defaultMaxSpillBytes, minMaxSpillBytes, maxMaxSpillBytes, "limits.max_spill_bytes")
	if err != nil {
		return err
	}
	if c.limits.MaxSpillBytes != 0 && c.limits.MaxSpillBytes < MinSpillBytes {
		// Disk is reserved a step at a time: a smaller budget could never hold one.
		return invalid("limits.max_spill_bytes", "must be 0 (spilling off) or at least 1048576 (one spill step)")
	}
	return buildFairBudget(r, &c.limits)
}

// buildFairBudget validates the caller share and the minimum upload rate.
func buildFairBudget(r *LimitsDoc, l *Limits) (err error) {
	l.CallerBodySharePercent, err = intIn(r.CallerBodySharePercent, defaultCallerBodyShare, minCallerBodyShare,
		maxCallerBodyShare, "limits.caller_body_share_percent")
	if err != nil {
		return err
	}
	l.MinUploadBytesPerSecond, err = intIn(r.MinUploadBytesPerSecond, defaultMinUploadRate, minMinUploadRate,
		maxMinUploadRate, "limits.min_upload_bytes_per_second")
	if err != nil {
		return err
	}
	l.MinUploadGrace, err = durIn(r.MinUploadGrace, defaultMinUploadGrace, minMinUploadGrace, maxMinUploadGrace, "limits.min_upload_grace")
	return err
}

func buildUpstream(r *UpstreamDoc, c *Config) (err error) {
	if r == nil {
		r = &UpstreamDoc{}
	}
	u := &c.upstream
	if u.ConnectTimeout, err = durIn(r.ConnectTimeout, defaultConnectTimeout, minConnectTimeout, maxConnectTimeout, "upstream.connect_timeout"); err != nil {
		return err
	}
	if u.FirstByteTimeout, err = durIn(r.FirstByteTimeout, defaultFirstByteTimeout, minFirstByteTimeout, maxFirstByteTimeout, "upstream.first_byte_timeout"); err != nil {
		return err
	}
	if u.Timeout, err = durIn(r.Timeout, defaultTimeout, minTimeout, maxTimeout, "upstream.timeout"); err != nil {
		return err
	}
	if u.MaxResponseBytes, err = intIn(r.MaxResponseBytes, defaultMaxResponse, minMaxResponse, maxMaxResponse, "upstream.max_response_bytes"); err != nil {
		return err
	}
	// The connect happens within the wait for the first byte, which
	// happens within the whole attempt.
	if u.ConnectTimeout > u.FirstByteTimeout {
		return invalid("upstream.connect_timeout", "must not exceed upstream.first_byte_timeout")
	}
	if u.FirstByteTimeout > u.Timeout {
		return invalid("upstream.first_byte_timeout", "must not exceed upstream.timeout")
	}
	return nil
}

func buildLog(r *LogDoc, c *Config) error {
	c.log = Log{Format: "text", Level: "info"}
	if r == nil {
		return nil
	}
	if r.Format != nil {
		if *r.Format != "text" && *r.Format != "json" {
			return invalid("log.format", "must be text or json")
		}
		c.log.Format = *r.Format
	}
	if r.Level != nil {
		switch *r.Level {
		case "debug", "info", "warn", "error":
			c.log.Level = *r.Level
		default:
			return invalid("log.level", "must be debug, info, warn or error")
		}
	}
	return nil
}

func buildDecisionLog(r *DecisionLogDoc, c *Config) error {
	if r == nil {
		r = &DecisionLogDoc{}
	}
	ring, err := intIn(r.RingSize, defaultRingSize, minRingSize, maxRingSize, "decision_log.ring_size")
	if err != nil {
		return err
	}
	line, err := intIn(r.MaxLineBytes, defaultMaxLineBytes, minMaxLineBytes, maxMaxLineBytes, "decision_log.max_line_bytes")
	if err != nil {
		return err
	}
	path, err := optPath(r.JSONLPath, "decision_log.jsonl_path")
	if err != nil {
		return err
	}
	unready, err := durIn(r.UnreadyAfter, defaultUnreadyAfter, minUnreadyAfter, maxUnreadyAfter, "decision_log.unready_after")
	if err != nil {
		return err
	}
	c.decisionLog = DecisionLog{RingSize: int(ring), JSONLPath: path, MaxLineBytes: int(line), UnreadyAfter: unready}
	return nil
}

func buildReadiness(r *ReadinessDoc, c *Config) (err error) {
	if r == nil {
		r = &ReadinessDoc{}
	}
	if c.readiness.Interval, err = durIn(r.Interval, defaultReadinessInterval, minReadinessInterval, maxReadinessInterval, "readiness.interval"); err != nil {
		return err
	}
	if c.readiness.Timeout, err = durIn(r.Timeout, defaultReadinessTimeout, minReadinessTimeout, maxReadinessTimeout, "readiness.timeout"); err != nil {
		return err
	}
	if c.readiness.Timeout > c.readiness.Interval {
		return invalid("readiness.timeout", "must not exceed readiness.interval")
	}
	return nil
}

// buildMetrics validates metrics.listen like listen; a fixed port must differ from the main
// listener's, since both are bound by one process.
func buildMetrics(r *MetricsDoc, c *Config) error {
	if r == nil || r.Listen == nil {
		return nil
	}
	if !validListen(*r.Listen) {
		return invalid("metrics.listen", "must be host:port with a port 0-65535")
	}
	if *r.Listen == c.listen && !strings.HasSuffix(c.listen, ":0") {
		return invalid("metrics.listen", "must differ from listen")
	}
	c.metrics.Listen = *r.Listen
	return nil
}

// buildRuntime validates the collector's settings; gc_percent and memory_limit_bytes stay 0 when
// absent (internal/gctune's defaults then depend on the container's limit, known only at start-up).
func buildRuntime(r *RuntimeDoc, c *Config) error {
	if r == nil {
		r = &RuntimeDoc{}
	}
	gc, err := intIn(r.GCPercent, 0, minGCPercent, maxGCPercent, "runtime.gc_percent")
	if err != nil {
		return err
	}
	limit, err := intIn(r.MemoryLimitBytes, 0, minMemoryLimitBytes, maxMemoryLimitBytes, "runtime.memory_limit_bytes")
	if err != nil {
		return err
	}
	share, err := intIn(r.MemoryLimitPercent, defaultMemoryLimitPercent, minMemoryLimitPercent, maxMemoryLimitPercent, "runtime.memory_limit_percent")
	c.runtime = Runtime{GCPercent: int(gc), MemoryLimitBytes: limit, MemoryLimitPercent: int(share)}
	return err
}

// intIn returns def when p is absent, else *p if it lies in [lo, hi].
func intIn(p *int64, def, lo, hi int64, path string) (int64, error) {
	if p == nil {
		return def, nil
	}
	if *p < lo || *p > hi {
		return 0, invalidf(path, "must be %d-%d", lo, hi)
	}
	return *p, nil
}

// durIn is intIn for durations.
func durIn(p *time.Duration, def, lo, hi time.Duration, path string) (time.Duration, error) {
	if p == nil {
		return def, nil
	}
	if *p < lo || *p > hi {
		return 0, invalidf(path, "must be %s-%s", fmtDuration(lo), fmtDuration(hi))
	}
	return *p, nil
}

// optPath returns "" when absent, else a valid file path.
func optPath(p *string, path string) (string, error) {
	if p == nil {
		return "", nil
	}
	if !validPath(*p) {
		return "", invalid(path, "must be a file path of 1-4096 characters without control characters")
	}
	return *p, nil
}

// fmtDuration prints a duration the way an operator writes it: "10m"
// rather than "10m0s". time.ParseDuration reads the result back exactly.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
