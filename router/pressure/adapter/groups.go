package adapter

import (
	"slices"

	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/router/scheduler"
)

// ReplicaCountSignal sums a request-count family over the distinct values of groupLabel and takes
// the largest series within a group. It is for an engine whose page repeats one group's counts on
// several series: SGLang's data-parallel ranks (dp_rank) hold their own requests, but the tensor-
// and pipeline-parallel ranks of one group run the same batch, so with every scheduler reporting
// they print the group's counts once per rank. A page without groupLabel is one group; a page
// where some of the model's series carry groupLabel and others do not is malformed: the unlabelled
// series may be another group or a total of the labelled ones, and summing them would double
// count. The served model's series are picked and checked as CountSignal picks and checks them.
func ReplicaCountSignal(mf *dto.MetricFamily, modelLabel, servedModel, groupLabel string) scheduler.Metric {
	type group struct {
		name string
		high float64
	}
	var groups []group
	valid := true
	grouped, ungrouped := false, false
	ok := eachSeries(mf, modelLabel, servedModel, func(labels []*dto.LabelPair, v float64) {
		if !validCount(v) {
			valid = false
			return
		}
		name := labelValue(labels, groupLabel)
		grouped, ungrouped = grouped || name != "", ungrouped || name == ""
		if i := slices.IndexFunc(groups, func(g group) bool { return g.name == name }); i >= 0 {
			groups[i].high = max(groups[i].high, v)
			return
		}
		groups = append(groups, group{name: name, high: v})
	})
	if !ok || !valid || (grouped && ungrouped) {
		return scheduler.MalformedMetric()
	}
	if len(groups) == 0 {
		return scheduler.Metric{}
	}
	sum := 0.0
	for _, g := range groups {
		sum += g.high
	}
	if sum > scheduler.MaxRequestCount {
		return scheduler.MalformedMetric()
	}
	return scheduler.Metric{Value: sum, Present: true}
}

// maxKinds bounds the kinds tabulate reads, so a row needs no allocation of its own.
const maxKinds = 3

// row is one group's series of a family (one Triton model version, say): the value of each kind
// asked for, and whether the page had it.
type row struct {
	group string
	vals  [maxKinds]float64
	has   [maxKinds]bool
}

// tabulate reads the served model's series of mf into one row per distinct groupLabel value, with
// one column per kinds entry (at most maxKinds), picked by the series' kindLabel value; a series
// of another kind only makes its group's row exist. Two series for one group and kind (told apart
// only by some other label) are ambiguous, so the family is refused, as is anything eachSeries
// refuses.
func tabulate(mf *dto.MetricFamily, modelLabel, servedModel, groupLabel, kindLabel string, kinds ...string) ([]row, bool) {
	if len(kinds) > maxKinds {
		return nil, false // a caller's mistake, refused rather than a panic
	}
	var rows []row
	valid := true
	ok := eachSeries(mf, modelLabel, servedModel, func(labels []*dto.LabelPair, v float64) {
		name := labelValue(labels, groupLabel)
		i := slices.IndexFunc(rows, func(r row) bool { return r.group == name })
		if i < 0 {
			rows = append(rows, row{group: name})
			i = len(rows) - 1
		}
		k := slices.Index(kinds, labelValue(labels, kindLabel))
		if k < 0 {
			return
		}
		if rows[i].has[k] {
			valid = false
		}
		rows[i].vals[k], rows[i].has[k] = v, true
	})
	return rows, ok && valid
}

// coverage says whether no row, every row or only some rows have kind k.
type coverage uint8

const (
	coveredNone coverage = iota
	coveredAll
	coveredSome
)

func covered(rows []row, k int) coverage {
	n := 0
	for _, r := range rows {
		if r.has[k] {
			n++
		}
	}
	switch n {
	case 0:
		return coveredNone
	case len(rows):
		return coveredAll
	}
	return coveredSome
}

// sumColumn is kind k's count summed over the rows: missing when no row has it, malformed when
// only some do (a group that lost a series cannot be counted as zero) or a value is not a count.
func sumColumn(rows []row, k int) scheduler.Metric {
	switch covered(rows, k) {
	case coveredNone:
		return scheduler.Metric{}
	case coveredSome:
		return scheduler.MalformedMetric()
	}
	values := make([]float64, len(rows))
	for i, r := range rows {
		values[i] = r.vals[k]
	}
	return countMetric(values, true)
}

// labelValue is the value of the label called name, "" when absent or name is "".
func labelValue(labels []*dto.LabelPair, name string) string {
	if name == "" {
		return ""
	}
	for _, l := range labels {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
