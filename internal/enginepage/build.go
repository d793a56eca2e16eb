package enginepage

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/engine"
)

// builder lays out one page: families in print order, each series with its labels sorted by name
// (as client libraries print them) and its value bound to the engine's state.
type builder struct {
	o    Options
	page *Page
	lazy bool // families built now appear only after the engine's first request
}

// series is one series of a family: its labels (name, value pairs) and its value.
type series struct {
	labels []string
	of     func(engine.Metrics) float64
}

func (b *builder) family(name, help string, t dto.MetricType, ss ...series) *dto.MetricFamily {
	mf := &dto.MetricFamily{Name: &name, Type: t.Enum()}
	if help != "" {
		mf.Help = &help
	}
	for _, s := range ss {
		m := &dto.Metric{}
		for i := 0; i+1 < len(s.labels); i += 2 {
			n, v := s.labels[i], s.labels[i+1]
			m.Label = append(m.Label, &dto.LabelPair{Name: &n, Value: &v})
		}
		dst := new(float64)
		switch t {
		case dto.MetricType_COUNTER:
			m.Counter = &dto.Counter{Value: dst}
		default:
			m.Gauge = &dto.Gauge{Value: dst}
		}
		mf.Metric = append(mf.Metric, m)
		b.page.values = append(b.page.values, value{dst: dst, of: s.of})
	}
	b.page.families = append(b.page.families, mf)
	b.page.byName[name] = mf
	if !b.lazy {
		b.page.early = append(b.page.early, mf)
		b.page.earlyBy[name] = mf
	}
	return mf
}

func (b *builder) gauge(name, help string, ss ...series) {
	b.family(name, help, dto.MetricType_GAUGE, ss...)
}

func (b *builder) counter(name, help string, ss ...series) {
	b.family(name, help, dto.MetricType_COUNTER, ss...)
}

// setLazily makes the families built by f appear only once the engine has taken a request.
func (b *builder) setLazily(f func()) {
	b.lazy, b.page.lazy = true, true
	f()
	b.lazy = false
}

// one is a family's single series with the given labels.
func one(of func(engine.Metrics) float64, labels ...string) series {
	return series{labels: labels, of: of}
}

// The engine's state, as the figures every page is made of.
func running(m engine.Metrics) float64 { return float64(m.Running) }
func waiting(m engine.Metrics) float64 { return float64(m.Waiting) }
func kvUsage(m engine.Metrics) float64 { return m.KVUsage }
func used(m engine.Metrics) float64    { return float64(m.UsedBlocks) }
func total(m engine.Metrics) float64   { return float64(m.TotalBlocks) }
func prompt(m engine.Metrics) float64  { return float64(m.PromptTokens) }
func gen(m engine.Metrics) float64     { return float64(m.GenerationTokens) }

// tokens scales a block figure to tokens.
func (b *builder) tokens(of func(engine.Metrics) float64) func(engine.Metrics) float64 {
	bs := float64(max(b.o.BlockSize, 1))
	return func(m engine.Metrics) float64 { return of(m) * bs }
}

func constant(v float64) func(engine.Metrics) float64 {
	return func(engine.Metrics) float64 { return v }
}

var builders = map[string]func(*builder){
	VLLM: buildVLLM, SGLang: buildSGLang, TRTLLM: buildTRTLLM, LlamaCpp: buildLlamaCpp, TGI: buildTGI,
}
