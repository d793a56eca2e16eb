package sim

import (
	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/internal/enginepage"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
)

// pages is what a virtual member's scrape reads, the way production reads a real member: its
// engine's state rendered as the tier's engine prints it (internal/enginepage, the page the fake
// serves) and read by that engine's adapter, the router's own. A scenario of any engine so proves
// its adapter end to end. Each member's page is built at its first scrape and refreshed in place
// after: a scrape allocates only what the adapter does.
type pages struct {
	engine string
	read   adapter.Adapter
	model  string
	of     map[int]*enginepage.Page // by member index, built at the member's first scrape
}

// newPages prepares the pages of the engine of the scenario's tier in the configuration in force
// (vllm unless the scenario sets one).
func newPages(w *world, cfg config.Config) (pages, error) {
	tier, _ := cfg.Tier(w.sc.Tier.ID)
	read, err := adapter.For(tier.Engine)
	if err != nil {
		return pages{}, err
	}
	if _, err := enginepage.New(enginepage.Options{Engine: tier.Engine}); err != nil {
		return pages{}, err
	}
	return pages{engine: tier.Engine, read: read, model: tier.ServedModel, of: map[int]*enginepage.Page{}}, nil
}

// sample reads member mi's page at its engine's state mt: the adapter's sample and its class.
func (p pages) sample(mi int, prof engine.Profile, mt engine.Metrics) (pressure.Sample, pressure.Class) {
	pg := p.of[mi]
	if pg == nil {
		pg, _ = enginepage.New(enginepage.Options{Engine: p.engine, Model: p.model, // checked by newPages
			BlockSize: prof.BlockSize, MaxNumSeqs: prof.MaxNumSeqs})
		p.of[mi] = pg
	}
	pg.Set(mt)
	s := p.read(pg.Families(), p.model)
	return s, adapter.Classify(s)
}
