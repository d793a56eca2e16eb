package intent

import (
	"maps"
	"sync"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/ident"
)

// MaxKept bounds the entries a Kept holds (tier and member entries together). Each is at most two
// 64-character IDs and a 64-character reason, so the kept part of a saved document stays far
// below ident.MaxDocumentBytes.
const MaxKept = ident.MaxKeptIntent

// Kept is the intent of record for scopes the configuration in force does not have: the valid
// entries of the loaded document that Restore could not apply, and the quiesced scopes a reload
// removed. They are saved with the live intent (so a restart keeps them too), shown as not
// configured, and applied again when a reload (or a restart) brings their scope back; an operator
// clears one by readmitting its scope. At most MaxKept entries: one past the bound is dropped
// (the caller logs it) and the entries already kept stay. Safe for concurrent use; its lock is
// never held with an admission lock except while Reapply quiesces.
type Kept struct {
	mu  sync.Mutex
	doc Document
	n   int
}

// NewKept returns an empty Kept.
func NewKept() *Kept { return &Kept{doc: Document{Tiers: map[string]string{}}} }

// Keep adds entries (replacing the reason of one already kept) and returns the new ones it dropped
// past MaxKept.
func (k *Kept) Keep(entries []Ignored) (dropped []Ignored) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, e := range entries {
		if _, had := k.lookupLocked(e.Tier, e.Member); !had && k.n >= MaxKept {
			dropped = append(dropped, e)
			continue
		} else if !had {
			k.n++
		}
		put(&k.doc, e.Tier, e.Member, e.Reason)
	}
	return dropped
}

// Reason returns the kept reason of a scope (member "" for the tier's own entry).
func (k *Kept) Reason(tier, member string) (string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lookupLocked(tier, member)
}

func (k *Kept) lookupLocked(tier, member string) (string, bool) {
	if member == "" {
		r, ok := k.doc.Tiers[tier]
		return r, ok
	}
	r, ok := k.doc.Members[tier][member]
	return r, ok
}

// Members returns the kept member entries of one tier (member -> reason), nil when none.
func (k *Kept) Members(tier string) map[string]string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.doc.Members[tier]) == 0 {
		return nil
	}
	return maps.Clone(k.doc.Members[tier])
}

// Clear removes a scope's kept entry and reports whether there was one.
func (k *Kept) Clear(tier, member string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.lookupLocked(tier, member); !ok {
		return false
	}
	k.n--
	if member == "" {
		delete(k.doc.Tiers, tier)
		return true
	}
	delete(k.doc.Members[tier], member)
	if len(k.doc.Members[tier]) == 0 {
		delete(k.doc.Members, tier)
	}
	return true
}

// Document returns a copy of what is kept.
func (k *Kept) Document() Document {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.doc.Clone()
}

// Reapply quiesces every kept scope set configures now, with its kept reason, and stops keeping
// it; the rest stays kept. It reports what it applied (Restored.Ignored: what stays kept).
func (k *Kept) Reapply(set *admission.Set) (Restored, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	restored, err := Restore(set, k.doc)
	if err != nil {
		return restored, err
	}
	k.doc, k.n = Document{Tiers: map[string]string{}}, 0
	for _, e := range restored.Ignored {
		put(&k.doc, e.Tier, e.Member, e.Reason)
		k.n++
	}
	return restored, nil
}

// Merge returns live with kept's entries added where live has none: the document a save writes.
func Merge(live, kept Document) Document {
	out := live.Clone()
	for t, r := range kept.Tiers {
		if _, ok := out.Tiers[t]; !ok {
			put(&out, t, "", r)
		}
	}
	for t, ms := range kept.Members {
		for m, r := range ms {
			if _, ok := out.Members[t][m]; !ok {
				put(&out, t, m, r)
			}
		}
	}
	return out
}

// put sets one entry of d (member "" for the tier's own).
func put(d *Document, tier, member, reason string) {
	if member == "" {
		if d.Tiers == nil {
			d.Tiers = map[string]string{}
		}
		d.Tiers[tier] = reason
		return
	}
	if d.Members == nil {
		d.Members = map[string]map[string]string{}
	}
	if d.Members[tier] == nil {
		d.Members[tier] = map[string]string{}
	}
	d.Members[tier][member] = reason
}
