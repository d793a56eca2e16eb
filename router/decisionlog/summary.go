package decisionlog

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Summary aggregates records for `anvil-router decisions summarize` and `make demo`.
// Every list is sorted by its key, so equal inputs give byte-identical text and JSON.
type Summary struct {
	Records  int           `json:"records"`  // records summarized
	Skipped  int           `json:"skipped"`  // records refused by the record invariants (and, with --skip-invalid, lines that did not read)
	Admitted int           `json:"admitted"` // records whose outcome implies a lease
	Attempts int           `json:"attempts"` // upstream attempts (at most one per admitted record)
	Outcomes []Count       `json:"outcomes"`
	Statuses []Count       `json:"status_classes"` // "none", "1xx".."5xx"
	Duration Quantiles     `json:"duration"`       // over records that made an attempt
	Usage    UsageSummary  `json:"usage"`
	Tiers    []TierSummary `json:"tiers"` // "" collects requests refused before routing
	// Callers totals each caller token's label (Record.Caller); "" collects the records without one
	// (printed "-", which no label can be). Per caller over the whole file, not per tier.
	Callers []CallerSummary `json:"callers"`
}

// CallerSummary aggregates the records of one caller label.
type CallerSummary struct {
	Caller   string       `json:"caller"`
	Records  int          `json:"records"`
	Attempts int          `json:"attempts"`
	Outcomes []Count      `json:"outcomes"`
	Usage    UsageSummary `json:"usage"`
}

// UsageSummary totals the members' own token counts over the records of a scope. Reported counts the
// attempts whose member reported usage; Unknown the attempts without (a member that reports none, an
// answer that failed first): their tokens are not in the totals, never estimated.
type UsageSummary struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	Reported         int   `json:"reported"`
	Unknown          int   `json:"unknown"`
}

// TierSummary aggregates one tier's records.
type TierSummary struct {
	Tier      string            `json:"tier"`
	Records   int               `json:"records"`
	Admitted  int               `json:"admitted"`
	Attempts  int               `json:"attempts"`
	Outcomes  []Count           `json:"outcomes"`
	Duration  Quantiles         `json:"duration"`
	Usage     UsageSummary      `json:"usage"`
	Members   []MemberSummary   `json:"members"`
	Scheduler *SchedulerSummary `json:"replica_scheduler,omitempty"` // records with evidence only
}

// MemberSummary aggregates the records that named one member.
type MemberSummary struct {
	Member   string       `json:"member"`
	Records  int          `json:"records"`
	Attempts int          `json:"attempts"`
	Outcomes []Count      `json:"outcomes"`
	Usage    UsageSummary `json:"usage"`
}

// SchedulerSummary aggregates a capacity tier's replica_scheduler evidence.
type SchedulerSummary struct {
	Decisions         int         `json:"decisions"`
	SelectedFreshness []Count     `json:"selected_freshness"` // freshness of the winning row
	EligibleSizes     []SizeCount `json:"eligible_sizes"`
}

// Count is one key's tally.
type Count struct {
	Key string `json:"key"`
	N   int    `json:"n"`
}

// SizeCount is the tally of one eligible-set size.
type SizeCount struct {
	Size int `json:"size"`
	N    int `json:"n"`
}

// Quantiles are nearest-rank quantiles of a duration sample (zero when N is 0).
type Quantiles struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
}

// Summarize aggregates records after the same normalization Log.Add applies: invalid
// IDs count under InvalidMarker, malformed evidence is ignored, and records that break
// an invariant are only counted in Skipped.
func Summarize(recs []Record) Summary {
	var all tally
	tiers := map[string]*tierTally{}
	callers := map[string]*tally{}
	for _, r := range recs {
		n, err := normalize(r)
		if err != nil {
			all.skipped++
			continue
		}
		rec := &n.rec
		all.add(rec)
		t := tiers[rec.Tier]
		if t == nil {
			t = &tierTally{members: map[string]*tally{}}
			tiers[rec.Tier] = t
		}
		t.add(rec)
		c := callers[rec.Caller]
		if c == nil {
			c = &tally{}
			callers[rec.Caller] = c
		}
		c.add(rec)
	}
	s := Summary{
		Records: all.records, Skipped: all.skipped, Admitted: all.admitted, Attempts: all.attempts,
		Outcomes: counts(all.outcomes), Statuses: counts(all.statuses), Duration: quantiles(all.durations),
		Usage: all.usage, Tiers: []TierSummary{}, Callers: []CallerSummary{},
	}
	for _, id := range sortedKeys(tiers) {
		s.Tiers = append(s.Tiers, tiers[id].summary(id))
	}
	for _, label := range sortedKeys(callers) {
		c := callers[label]
		s.Callers = append(s.Callers, CallerSummary{Caller: label, Records: c.records, Attempts: c.attempts,
			Outcomes: counts(c.outcomes), Usage: c.usage})
	}
	return s
}

// tally accumulates one scope (all records, a tier or a member).
type tally struct {
	records, skipped, admitted, attempts int
	outcomes, statuses                   map[string]int
	durations                            []time.Duration
	usage                                UsageSummary
}

func (t *tally) add(r *Record) {
	if t.outcomes == nil {
		t.outcomes, t.statuses = map[string]int{}, map[string]int{}
	}
	t.records++
	t.attempts += r.Attempts
	if r.Outcome.Admitted() {
		t.admitted++
	}
	t.outcomes[string(r.Outcome)]++
	t.statuses[statusClass(r.Status)]++
	if r.Attempts == 1 {
		t.durations = append(t.durations, r.Duration)
		t.usage.add(r.Usage)
	}
}

func (u *UsageSummary) add(r Usage) {
	if !r.Reported {
		u.Unknown++
		return
	}
	u.Reported++
	u.PromptTokens += r.Prompt
	u.CompletionTokens += r.Completion
}

type tierTally struct {
	tally
	members   map[string]*tally
	decisions int
	freshness map[string]int
	sizes     map[int]int
}

func (t *tierTally) add(r *Record) {
	t.tally.add(r)
	if r.Member != "" {
		m := t.members[r.Member]
		if m == nil {
			m = &tally{}
			t.members[r.Member] = m
		}
		m.add(r)
	}
	d := r.ReplicaScheduler
	if d == nil {
		return
	}
	if t.freshness == nil {
		t.freshness, t.sizes = map[string]int{}, map[int]int{}
	}
	t.decisions++
	t.freshness[d.Score(0).Freshness().String()]++ // row 0 is the selected member
	t.sizes[d.EligibleCount()]++
}

func (t *tierTally) summary(id string) TierSummary {
	ts := TierSummary{
		Tier: id, Records: t.records, Admitted: t.admitted, Attempts: t.attempts,
		Outcomes: counts(t.outcomes), Duration: quantiles(t.durations), Usage: t.usage, Members: []MemberSummary{},
	}
	for _, mid := range sortedKeys(t.members) {
		m := t.members[mid]
		ts.Members = append(ts.Members, MemberSummary{Member: mid, Records: m.records,
			Attempts: m.attempts, Outcomes: counts(m.outcomes), Usage: m.usage})
	}
	if t.decisions > 0 {
		sc := &SchedulerSummary{Decisions: t.decisions, SelectedFreshness: counts(t.freshness)}
		for _, size := range sortedKeys(t.sizes) {
			sc.EligibleSizes = append(sc.EligibleSizes, SizeCount{Size: size, N: t.sizes[size]})
		}
		ts.Scheduler = sc
	}
	return ts
}

func statusClass(status int) string {
	if status == 0 {
		return "none"
	}
	return strconv.Itoa(status/100) + "xx"
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func counts(m map[string]int) []Count {
	out := []Count{}
	for _, k := range sortedKeys(m) {
		out = append(out, Count{Key: k, N: m[k]})
	}
	return out
}

// quantiles uses the nearest-rank method: the smallest value with at least q of the
// sample at or below it.
func quantiles(ds []time.Duration) Quantiles {
	q := Quantiles{N: len(ds)}
	if len(ds) == 0 {
		return q
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(pct int) time.Duration { return s[(pct*len(s)+99)/100-1] }
	q.P50, q.P99 = rank(50), rank(99)
	return q
}

// Text renders the summary as stable, human-readable lines.
func (s Summary) Text() string {
	var b strings.Builder
	b.WriteString("records=" + strconv.Itoa(s.Records) + " skipped=" + strconv.Itoa(s.Skipped) +
		" admitted=" + strconv.Itoa(s.Admitted) + " attempts=" + strconv.Itoa(s.Attempts) + "\n")
	b.WriteString("outcomes:" + countText(s.Outcomes) + "\n")
	b.WriteString("status:" + countText(s.Statuses) + "\n")
	b.WriteString("attempt_duration:" + quantileText(s.Duration) + "\n")
	b.WriteString("usage:" + usageText(s.Usage) + "\n")
	for _, t := range s.Tiers {
		tier := t.Tier
		if tier == "" {
			tier = "-"
		}
		b.WriteString("tier " + tier + " records=" + strconv.Itoa(t.Records) + " admitted=" +
			strconv.Itoa(t.Admitted) + " attempts=" + strconv.Itoa(t.Attempts) + quantileText(t.Duration) + "\n")
		b.WriteString("  outcomes:" + countText(t.Outcomes) + "\n")
		b.WriteString("  usage:" + usageText(t.Usage) + "\n")
		for _, m := range t.Members {
			b.WriteString("  member " + m.Member + " records=" + strconv.Itoa(m.Records) +
				" attempts=" + strconv.Itoa(m.Attempts) + countText(m.Outcomes) + "\n")
			b.WriteString("    usage:" + usageText(m.Usage) + "\n")
		}
		if sc := t.Scheduler; sc != nil {
			b.WriteString("  replica_scheduler decisions=" + strconv.Itoa(sc.Decisions) +
				" selected_freshness:" + countText(sc.SelectedFreshness) + " eligible_sizes:")
			for _, e := range sc.EligibleSizes {
				b.WriteString(" " + strconv.Itoa(e.Size) + "=" + strconv.Itoa(e.N))
			}
			b.WriteString("\n")
		}
	}
	for _, c := range s.Callers {
		label := c.Caller
		if label == "" {
			label = "-"
		}
		b.WriteString("caller " + label + " records=" + strconv.Itoa(c.Records) +
			" attempts=" + strconv.Itoa(c.Attempts) + countText(c.Outcomes) + "\n")
		b.WriteString("  usage:" + usageText(c.Usage) + "\n")
	}
	return b.String()
}

func countText(cs []Count) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(" " + c.Key + "=" + strconv.Itoa(c.N))
	}
	return b.String()
}

// usageText is a scope's token totals and how many attempts reported usage or did not.
func usageText(u UsageSummary) string {
	return " prompt_tokens=" + strconv.FormatInt(u.PromptTokens, 10) + " completion_tokens=" +
		strconv.FormatInt(u.CompletionTokens, 10) + " reported=" + strconv.Itoa(u.Reported) +
		" unknown=" + strconv.Itoa(u.Unknown)
}

// quantileText omits N: it always equals the scope's attempts.
func quantileText(q Quantiles) string {
	return " p50_ms=" + millis(q.P50) + " p99_ms=" + millis(q.P99)
}
