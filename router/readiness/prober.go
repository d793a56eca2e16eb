package readiness

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// maxModelsBody bounds the /v1/models body the prober reads. A real model list is a few hundred bytes.
const maxModelsBody = 1 << 20

// Prober probes every target in the background and records completed verdicts into its State.
type Prober struct {
	client *http.Client
	state  *State
	passed func(tier, member string)

	mu       sync.Mutex // guards what a reload changes
	targets  []Target
	interval time.Duration
	timeout  time.Duration
}

// Option configures a Prober.
type Option func(*Prober)

// WithPassed calls f after every recorded Ready verdict, from the probing goroutine: the server
// tells passive health that the member's probe passed.
func WithPassed(f func(tier, member string)) Option { return func(p *Prober) { p.passed = f } }

// NewProber returns a prober for targets. interval is the pause between rounds; timeout bounds each
// member's whole probe (both requests). The prober uses its own copy of client (nil: a dedicated
// transport that never goes through an environment proxy) that never follows a redirect and keeps no
// cookies, like the relay: a member answering 3xx is not ready, and its redirect target is never
// contacted.
func NewProber(client *http.Client, targets []Target, interval, timeout time.Duration, opts ...Option) *Prober {
	ts := append([]Target(nil), targets...)
	p := &Prober{client: probeClient(client), targets: ts, state: NewState(ts), interval: interval, timeout: timeout}
	for _, opt := range opts {
		opt(p)
	}
	return p
}

// probeClient copies the caller's client (its transport and timeout only) so that a probe never
// follows a redirect and never keeps a cookie; without a caller client the transport ignores
// environment proxies.
func probeClient(client *http.Client) *http.Client {
	c := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	if client != nil {
		c = &http.Client{Transport: client.Transport, Timeout: client.Timeout}
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// Retarget is a reload's step: probe targets from now on, every interval, each bounded by timeout.
// The State adopts the targets (see State.Adopt); a round already running finishes, and its
// verdicts for replaced targets are dropped. It returns the targets that are new (unprobed), for
// the caller to probe at once.
func (p *Prober) Retarget(targets []Target, interval, timeout time.Duration) []Target {
	ts := append([]Target(nil), targets...)
	p.mu.Lock()
	old := make(map[Target]bool, len(p.targets))
	for _, t := range p.targets {
		old[t] = true
	}
	p.targets, p.interval, p.timeout = ts, interval, timeout
	p.mu.Unlock()
	p.state.Adopt(ts)
	var fresh []Target
	for _, t := range ts {
		if !old[t] {
			fresh = append(fresh, t)
		}
	}
	return fresh
}

// ProbeTargets probes the given targets once, concurrently, and records their verdicts.
func (p *Prober) ProbeTargets(ctx context.Context, targets []Target) {
	var wg sync.WaitGroup
	for _, tg := range targets {
		wg.Go(func() {
			v := p.Probe(ctx, tg)
			if ctx.Err() == nil {
				_ = p.record(tg, v)
			}
		})
	}
	wg.Wait()
}

func (p *Prober) pace() ([]Target, time.Duration, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.targets, p.interval, p.timeout
}

// record stores a completed verdict and announces a passed one.
func (p *Prober) record(tg Target, v Verdict) error {
	if err := p.state.RecordTarget(tg, v); err != nil {
		return err
	}
	if v == Ready && p.passed != nil {
		p.passed(tg.Tier, tg.Member)
	}
	return nil
}

// State returns the verdict store the request path reads.
func (p *Prober) State() *State { return p.state }

// Run probes every member once per interval until ctx is done. Members are probed concurrently so one
// hung member never delays another's verdict.
func (p *Prober) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.ProbeAll(ctx)
		_, interval, _ := p.pace()
		t.Reset(interval)
	}
}

// ProbeAll runs one round over every member and returns when all verdicts are recorded.
func (p *Prober) ProbeAll(ctx context.Context) {
	targets, _, _ := p.pace()
	p.ProbeTargets(ctx, targets)
}

// ProbeMember probes one registered member now and records the verdict; member readmission uses it so
// only that member's readiness is verified.
func (p *Prober) ProbeMember(ctx context.Context, tier, member string) (Verdict, error) {
	targets, _, _ := p.pace()
	for _, tg := range targets {
		if tg.Tier == tier && tg.Member == member {
			v := p.Probe(ctx, tg)
			if ctx.Err() != nil {
				// The caller gave up: that says nothing about the member, so the last verdict stands.
				return Unprobed, ctx.Err()
			}
			return v, p.record(tg, v)
		}
	}
	return Unprobed, ErrUnknownMember
}

// Probe checks one target: /v1/models first (identity, see Rule.CheckModels), then its rule's health
// path.
func (p *Prober) Probe(ctx context.Context, tg Target) Verdict {
	_, _, timeout := p.pace()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	base := strings.TrimRight(tg.BaseURL, "/")
	status, body, err := p.get(ctx, base+"/v1/models", maxModelsBody)
	if v := answered(status, err); v != Ready {
		return v
	}
	if v := tg.Rule.CheckModels(body, tg.ServedModel); v != Ready {
		return v
	}
	status, _, err = p.get(ctx, base+tg.Rule.HealthPath(), 64) // read (and so reuse the connection of) a short body
	return answered(status, err)
}

// answered classifies one probe request's answer: Ready means 200.
func answered(status int, err error) Verdict {
	switch {
	case err != nil:
		return Unreachable
	case status >= 300 && status < 400:
		return Redirected
	case status != http.StatusOK:
		return Unhealthy
	}
	return Ready
}

func (p *Prober) get(ctx context.Context, url string, limit int64) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return 0, nil, err
	}
	if int64(len(body)) > limit {
		body = nil // oversized: never trusted
	}
	return resp.StatusCode, body, nil
}
