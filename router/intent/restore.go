package intent

import (
	"github.com/anvil-llm/anvil/router/admission"
)

// Why an entry of a valid document was not restored.
const (
	IgnoredUnknownTier   = "tier not configured"
	IgnoredUnknownMember = "member not configured"
	IgnoredNotReplica    = "tier has no members (direct tier)"
)

// Ignored is one valid entry of a document that names something the configuration no longer has.
// Its fields passed the ID and reason grammars, so they are safe to log.
type Ignored struct {
	Tier   string
	Member string // "" for tier intent
	Reason string
	Why    string
}

// Restored counts what Restore applied.
type Restored struct {
	Tiers, Members int
	Ignored        []Ignored // in sorted tier, then member order
}

// Restore quiesces every configured scope the document names, with its recorded reason, through
// admission's own transition calls, and reports the entries it ignored. The document must come from
// Decode (or FromSnapshots); its reasons and IDs are already valid, so a refusal here is a bug and
// is returned.
func Restore(set *admission.Set, d Document) (Restored, error) {
	apply, ignored := classify(set, d)
	out := Restored{Ignored: ignored}
	for _, e := range apply {
		t, _ := set.Tier(e.Tier)
		if e.Member == "" {
			if err := t.Quiesce(e.Reason); err != nil {
				return out, err
			}
			out.Tiers++
			continue
		}
		if err := t.QuiesceMember(e.Member, e.Reason); err != nil {
			return out, err
		}
		out.Members++
	}
	return out, nil
}

// Unconfigured returns the entries of d that set does not configure, as Restore would ignore them.
func Unconfigured(set *admission.Set, d Document) []Ignored {
	_, ignored := classify(set, d)
	return ignored
}

// classify splits d's entries into those set configures (Why empty) and those it does not, tiers
// first, each in sorted order.
func classify(set *admission.Set, d Document) (apply, ignored []Ignored) {
	for _, id := range sortedKeys(d.Tiers) {
		e := Ignored{Tier: id, Reason: d.Tiers[id]}
		if _, ok := set.Tier(id); !ok {
			e.Why = IgnoredUnknownTier
			ignored = append(ignored, e)
			continue
		}
		apply = append(apply, e)
	}
	for _, id := range sortedKeys(d.Members) {
		ms := d.Members[id]
		t, ok := set.Tier(id)
		for _, m := range sortedKeys(ms) {
			e := Ignored{Tier: id, Member: m, Reason: ms[m]}
			switch {
			case !ok:
				e.Why = IgnoredUnknownTier
			case t.Kind() != admission.KindReplica:
				e.Why = IgnoredNotReplica
			case !hasMember(t, m):
				e.Why = IgnoredUnknownMember
			default:
				apply = append(apply, e)
				continue
			}
			ignored = append(ignored, e)
		}
	}
	return apply, ignored
}

func hasMember(t *admission.TierAdmission, member string) bool {
	for _, id := range t.Members() {
		if id == member {
			return true
		}
	}
	return false
}

// FromSnapshots builds the document of what admission holds now, from one Snapshots result, so
// tier and member intent are read together.
func FromSnapshots(snaps []admission.Snapshot) Document {
	d := Document{Tiers: map[string]string{}}
	for _, s := range snaps {
		if s.Retiring {
			continue // a tier a reload removed: nothing to restore it into
		}
		if s.State == admission.StateQuiesced {
			d.Tiers[s.ID] = s.Reason
		}
		for _, m := range s.Members {
			if m.State != admission.StateQuiesced || m.Retiring {
				continue
			}
			if d.Members == nil {
				d.Members = map[string]map[string]string{}
			}
			if d.Members[s.ID] == nil {
				d.Members[s.ID] = map[string]string{}
			}
			d.Members[s.ID][m.ID] = m.Reason
		}
	}
	return d
}
