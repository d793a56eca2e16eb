package pressure

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/anvil-llm/anvil/router/ident"
)

// MaxServedModelLength bounds a served model name (bytes).
const MaxServedModelLength = 256

// Registration and lookup errors. Registration errors name the offending position
// (tier index, member index) but never echo the rejected value.
var (
	// ErrInvalidID: a tier or member ID does not match ident.ValidID.
	ErrInvalidID = errors.New("pressure: invalid tier or member id")
	// ErrDuplicateTier: two capacity tiers share an ID.
	ErrDuplicateTier = errors.New("pressure: duplicate tier id")
	// ErrDuplicateMember: two members of one tier share an ID.
	ErrDuplicateMember = errors.New("pressure: duplicate member id")
	// ErrMemberCount: a capacity tier has fewer than 2 or more than 16 members.
	ErrMemberCount = errors.New("pressure: a capacity tier needs 2-16 members")
	// ErrCapacity: a member ceiling is outside 1..100000 (mandatory in capacity mode).
	ErrCapacity = errors.New("pressure: member capacity must be 1-100000")
	// ErrEndpoint: a member endpoint is not an absolute http(s) base URL without
	// userinfo, query or fragment.
	ErrEndpoint = errors.New("pressure: member endpoint must be an absolute http or https base URL")
	// ErrServedModel: the served model name is empty, too long, not UTF-8 or holds
	// control characters.
	ErrServedModel = errors.New("pressure: invalid served model name")
	// ErrOverflow: more than ident.MaxCapacityMembers members in one cache.
	ErrOverflow = errors.New("pressure: more than 256 members in one cache")
	// ErrUnknownTier: Snapshot or Peek named a tier that is not registered.
	ErrUnknownTier = errors.New("pressure: unknown tier")
)

// TierSpec is one capacity-mode replica tier. Only capacity tiers may be
// registered: the composition root passes exactly those, so direct and round-robin
// tiers are unrepresentable here rather than rejected at run time.
type TierSpec struct {
	ID          string
	ServedModel string // the model name the tier's members report in their metrics
	// Engine names the adapter that reads the members' pages (router/pressure/adapter; "" is vLLM).
	// The core only carries it to the jobs and keys samples by it: the shell resolves and checks it.
	Engine  string
	Members []MemberSpec
}

// MemberSpec is one member of a capacity tier.
type MemberSpec struct {
	ID       string
	Endpoint string // base URL; /metrics is appended
	Capacity int64  // configured member ceiling, 1..100000: the scheduler capacity
}

// span is the half-open range of a tier's members in Core.members.
type span struct{ lo, hi int }

// memberKey is the composite (tier, member) identity: one member ID may appear in
// several tiers, each with its own cache entry.
type memberKey struct{ tier, member string }

// register validates tiers and lays their members out contiguously, each tier's
// members sorted by ID so that refreshes are queued in a deterministic order.
func register(tiers []TierSpec) ([]member, map[string]span, map[memberKey]int, error) {
	total := 0
	for _, t := range tiers {
		total += len(t.Members)
	}
	if total > ident.MaxCapacityMembers {
		return nil, nil, nil, ErrOverflow
	}
	members := make([]member, 0, total)
	spans := make(map[string]span, len(tiers))
	keys := make(map[memberKey]int, total)
	for i, t := range tiers {
		if err := validateTier(i, t); err != nil {
			return nil, nil, nil, err
		}
		if _, dup := spans[t.ID]; dup {
			return nil, nil, nil, fmt.Errorf("%w: tier %d", ErrDuplicateTier, i)
		}
		lo := len(members)
		for j, m := range t.Members {
			if err := validateMember(i, j, m); err != nil {
				return nil, nil, nil, err
			}
			members = append(members, member{
				tier: t.ID, id: m.ID, model: t.ServedModel, engine: t.Engine,
				endpoint: strings.TrimSuffix(m.Endpoint, "/"), capacity: m.Capacity,
			})
		}
		own := members[lo:]
		slices.SortFunc(own, func(a, b member) int { return strings.Compare(a.id, b.id) })
		for k := range own {
			if k > 0 && own[k].id == own[k-1].id {
				return nil, nil, nil, fmt.Errorf("%w: tier %d", ErrDuplicateMember, i)
			}
			keys[memberKey{t.ID, own[k].id}] = lo + k
		}
		spans[t.ID] = span{lo, len(members)}
	}
	return members, spans, keys, nil
}

func validateTier(i int, t TierSpec) error {
	switch {
	case !ident.ValidID(t.ID):
		return fmt.Errorf("%w: tier %d", ErrInvalidID, i)
	case !validServedModel(t.ServedModel):
		return fmt.Errorf("%w: tier %d", ErrServedModel, i)
	case len(t.Members) < ident.MinMembers || len(t.Members) > ident.MaxMembers:
		return fmt.Errorf("%w: tier %d", ErrMemberCount, i)
	}
	return nil
}

func validateMember(i, j int, m MemberSpec) error {
	switch {
	case !ident.ValidID(m.ID):
		return fmt.Errorf("%w: tier %d member %d", ErrInvalidID, i, j)
	case m.Capacity < 1 || m.Capacity > ident.MaxCeiling:
		return fmt.Errorf("%w: tier %d member %d", ErrCapacity, i, j)
	case !validEndpoint(m.Endpoint):
		return fmt.Errorf("%w: tier %d member %d", ErrEndpoint, i, j)
	}
	return nil
}

// validEndpoint accepts what config produces (scheme://host[:port][/path]); it is a
// second line of defence, not a normalizer.
func validEndpoint(s string) bool {
	if len(s) > 2048 || strings.ContainsAny(s, "?# \t\r\n") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.Opaque == "" && u.User == nil
}

func validServedModel(s string) bool {
	if s == "" || len(s) > MaxServedModelLength || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, unicode.IsControl)
}
