package qualification

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/readiness"
)

// FakeHeader is the header every fake vLLM answer carries (fakevllm.IdentityHeader; this package
// may not import the fake, a test pins the two together). A member that answers with it is a fake,
// whatever the file declares: the run is synthetic.
const FakeHeader = "X-Anvil-Fakevllm"

// Bounds of what the run reads.
const (
	maxAnswerBytes = 1 << 20 // models, version, capacity, admission, summary, readyz
	maxMetricBytes = 8 << 20 // a vLLM /metrics page with many histograms
	maxShownModels = 16
)

// errTooLarge is an answer longer than its bound.
var errTooLarge = errors.New("the answer is too large")

// web sends the run's own GETs (everything but the bench's load and the transitions, which go
// through router/manage). Its errors name a class, never the URL or a token.
type web struct {
	hc *http.Client
}

// answer is one GET's result.
type answer struct {
	status int
	fake   bool // the answer carried FakeHeader
	body   []byte
}

// readTimeout bounds each of the run's own reads and its non-drain transitions; a drain is given
// its wait on top.
const readTimeout = 30 * time.Second

func (w web) get(ctx context.Context, url, token string, limit int64) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return answer{}, &manage.TransportError{Class: manage.TransportOther}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		return answer{}, manage.Transport(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return answer{}, manage.Transport(ctx, err)
	}
	a := answer{status: resp.StatusCode, fake: resp.Header.Get(FakeHeader) != "", body: body}
	if int64(len(body)) > limit {
		return a, errTooLarge
	}
	return a, nil
}

// MemberObservation is what preflight saw of one member: the identities its /v1/models lists,
// whether that is exactly the tier's served model (the router's own readiness rule), its health,
// its engine version and whether it identified itself as a fake.
type MemberObservation struct {
	ID            string   `json:"id"`
	Models        []string `json:"models"`
	ListedModels  int      `json:"listed_models"`
	ExactIdentity bool     `json:"exact_identity"`
	MaxModelLen   *int64   `json:"max_model_len,omitempty"`
	HealthStatus  int      `json:"health_status"`
	EngineVersion string   `json:"engine_version,omitempty"`
	Fake          bool     `json:"fake_identity"`
	Errors        []string `json:"errors,omitempty"`
}

// observeMember asks a member for /v1/models, /health and /version, with the members' token.
func (w web) observeMember(ctx context.Context, m Member, served, token string) MemberObservation {
	base := strings.TrimRight(m.URL, "/")
	o := MemberObservation{ID: m.ID, Models: []string{}}
	note := func(what string, err error) { o.Errors = append(o.Errors, what+": "+err.Error()) }
	if a, err := w.get(ctx, base+"/v1/models", token, maxAnswerBytes); err != nil {
		o.Fake = o.Fake || a.fake
		note("/v1/models", err)
	} else {
		o.Fake = o.Fake || a.fake
		if a.status != http.StatusOK {
			note("/v1/models", fmt.Errorf("HTTP %d", a.status))
		} else if list, err := parseModels(a.body); err != nil {
			note("/v1/models", err)
		} else {
			o.ListedModels = len(list)
			for i, card := range list {
				if i < maxShownModels {
					o.Models = append(o.Models, shown(card.ID))
				}
			}
			// The router's own identity rule: the served model, and nothing but LoRA adapters of it.
			o.ExactIdentity = readiness.CheckModels(a.body, served) == readiness.Ready
			for _, card := range list {
				if o.ExactIdentity && card.ID == served {
					o.MaxModelLen = card.MaxModelLen
				}
			}
		}
	}
	if a, err := w.get(ctx, base+"/health", token, maxAnswerBytes); err != nil {
		note("/health", err)
	} else {
		o.Fake = o.Fake || a.fake
		o.HealthStatus = a.status
	}
	if a, err := w.get(ctx, base+"/version", token, maxAnswerBytes); err != nil {
		note("/version", err)
	} else {
		o.Fake = o.Fake || a.fake
		if a.status == http.StatusOK {
			if v, err := parseVersion(a.body); err != nil {
				note("/version", err)
			} else {
				o.EngineVersion = v
			}
		}
	}
	return o
}

// modelCard is the part of an OpenAI /v1/models entry the run reads.
type modelCard struct {
	ID          string `json:"id"`
	MaxModelLen *int64 `json:"max_model_len"`
}

var errNotModels = errors.New("the answer is not an OpenAI model list")

// parseModels reads an OpenAI /v1/models body: an object whose data is a list of objects with a
// string id (and, from vLLM, an integer max_model_len). Other keys are ignored, as clients of the
// API do.
func parseModels(body []byte) ([]modelCard, error) {
	var list struct {
		Data *[]modelCard `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || list.Data == nil {
		return nil, errNotModels
	}
	for _, c := range *list.Data {
		if c.ID == "" || c.MaxModelLen != nil && *c.MaxModelLen < 0 {
			return nil, errNotModels
		}
	}
	return *list.Data, nil
}

var errNotVersion = errors.New("the answer is not a version")

// parseVersion reads vLLM's GET /version: {"version": "0.12.0"}.
func parseVersion(body []byte) (string, error) {
	var v struct {
		Version *string `json:"version"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Version == nil || *v.Version == "" {
		return "", errNotVersion
	}
	return shown(*v.Version), nil
}

// shown is an answered string as a report may carry it: printable ASCII, at most 256 bytes;
// anything else is replaced by a fixed marker, so a member cannot write arbitrary bytes into the
// evidence.
func shown(s string) string {
	if s != "" && !printable(s, maxText) {
		return "(not printable)"
	}
	return s
}

// memberLoad is what a member's /metrics says about the served model: finished requests (the sum
// of vllm:request_success_total) and requests running now.
type memberLoad struct {
	Finished float64 `json:"finished_requests"`
	Running  float64 `json:"running_requests"`
	Fake     bool    `json:"-"`
}

// Names of the vLLM series the failure phase reads.
const (
	metricSuccess = "vllm:request_success_total"
	metricRunning = "vllm:num_requests_running"
	labelModel    = "model_name"
)

var errNotMetrics = errors.New("the page has no usable vLLM request counters for the served model")

// scrapeMember reads one member's /metrics.
func (w web) scrapeMember(ctx context.Context, m Member, served, token string) (memberLoad, error) {
	a, err := w.get(ctx, strings.TrimRight(m.URL, "/")+"/metrics", token, maxMetricBytes)
	if err != nil {
		return memberLoad{Fake: a.fake}, err
	}
	if a.status != http.StatusOK {
		return memberLoad{Fake: a.fake}, fmt.Errorf("HTTP %d", a.status)
	}
	l, err := parseMetrics(a.body, served)
	l.Fake = a.fake
	return l, err
}

// parseMetrics reads a Prometheus text page: the served model's series (label model_name) of
// vllm:request_success_total (a counter, summed over finished_reason and engine) and
// vllm:num_requests_running (a gauge, summed over engines). Both must be present with finite,
// non-negative integer values.
func parseMetrics(body []byte, served string) (memberLoad, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return memberLoad{}, errNotMetrics
	}
	finished, ok1 := sumSeries(fams[metricSuccess], served)
	running, ok2 := sumSeries(fams[metricRunning], served)
	if !ok1 || !ok2 {
		return memberLoad{}, errNotMetrics
	}
	return memberLoad{Finished: finished, Running: running}, nil
}

func sumSeries(mf *dto.MetricFamily, served string) (float64, bool) {
	if mf == nil {
		return 0, false
	}
	sum, n := 0.0, 0
	for _, m := range mf.GetMetric() {
		if !hasLabel(m, labelModel, served) {
			continue
		}
		var v float64
		switch {
		case m.GetCounter() != nil:
			v = m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			v = m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			v = m.GetUntyped().GetValue()
		default:
			return 0, false
		}
		if !(v >= 0 && v < 1<<53) || math.Trunc(v) != v {
			return 0, false
		}
		sum += v
		n++
	}
	return sum, n > 0 && sum < 1<<53
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue() == value
		}
	}
	return false
}
