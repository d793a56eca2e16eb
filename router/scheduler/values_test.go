package scheduler

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnums(t *testing.T) {
	type enum = enumValue
	tests := []struct {
		v     enum
		name  string
		parse func(string) (enum, error)
	}{
		{FreshnessUnknown, "unknown", parseF},
		{FreshnessFresh, "fresh", parseF},
		{FreshnessStale, "stale", parseF},
		{FreshnessFailed, "failed", parseF},
		{SignalMissing, "missing", parseS},
		{SignalValid, "valid", parseS},
		{SignalInvalid, "invalid", parseS},
		{ReasonSelected, "selected", parseR},
		{ReasonNoEligible, "no-eligible-member", parseR},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.name, tt.v.String())
			b, err := tt.v.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, tt.name, string(b))
			got, err := tt.parse(tt.name)
			require.NoError(t, err)
			assert.Equal(t, tt.v, got)
			_, err = tt.parse(strings.ToUpper(tt.name))
			assert.ErrorIs(t, err, ErrUnknownName)
		})
	}
	for _, bad := range []enum{Freshness(4), SignalState(3), Reason(2)} {
		_, err := bad.MarshalText()
		assert.ErrorIs(t, err, ErrOutOfRange)
	}
	assert.Equal(t, "invalid", Freshness(9).String())
	assert.Equal(t, "invalid-state", SignalState(9).String())
	assert.Equal(t, "invalid", Reason(9).String())
	assert.False(t, Freshness(4).Valid())
	assert.False(t, SignalState(3).Valid())
	assert.False(t, Reason(2).Valid())
}

func parseF(s string) (enumValue, error) { return ParseFreshness(s) }
func parseS(s string) (enumValue, error) { return ParseSignalState(s) }
func parseR(s string) (enumValue, error) { return ParseReason(s) }

type enumValue = interface {
	String() string
	MarshalText() ([]byte, error)
}

func TestEnumsJSON(t *testing.T) {
	type row struct {
		F Freshness   `json:"f"`
		S SignalState `json:"s"`
		R Reason      `json:"r"`
	}
	b, err := json.Marshal(row{FreshnessStale, SignalInvalid, ReasonSelected})
	require.NoError(t, err)
	assert.JSONEq(t, `{"f":"stale","s":"invalid","r":"selected"}`, string(b))
	var got row
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, row{FreshnessStale, SignalInvalid, ReasonSelected}, got)
	for _, bad := range []string{`{"f":"bogus"}`, `{"s":"VALID"}`, `{"r":""}`} {
		got := row{F: FreshnessFresh}
		assert.ErrorIs(t, json.Unmarshal([]byte(bad), &got), ErrUnknownName, bad)
		assert.Equal(t, FreshnessFresh, got.F, "failed decode leaves the value alone")
	}
}

func TestNewPressure(t *testing.T) {
	const (
		M = SignalMissing
		V = SignalValid
		I = SignalInvalid
	)
	tests := []struct {
		name    string
		f       Freshness
		ppm     int64
		has     bool
		req, kv SignalState
		err     error
	}{
		{"fresh request", FreshnessFresh, 2_333_334, true, V, M, nil},
		{"fresh both", FreshnessFresh, MaxPressurePPM, true, V, V, nil},
		{"fresh kv only", FreshnessFresh, MaxKVPPM, true, M, V, nil},
		{"fresh zero", FreshnessFresh, 0, true, V, V, nil},
		{"stale", FreshnessStale, 0, false, V, M, nil},
		{"failed", FreshnessFailed, 0, false, M, M, nil},
		{"unknown missing", FreshnessUnknown, 0, false, M, M, nil},
		{"unknown invalid", FreshnessUnknown, 0, false, I, V, nil},
		{"unknown valid (bad clock)", FreshnessUnknown, 0, false, V, V, nil},
		{"bad freshness", Freshness(4), 0, false, M, M, ErrOutOfRange},
		{"bad request state", FreshnessUnknown, 0, false, SignalState(3), M, ErrOutOfRange},
		{"bad kv state", FreshnessUnknown, 0, false, M, SignalState(200), ErrOutOfRange},
		{"negative ppm", FreshnessFresh, -1, true, V, M, ErrOutOfRange},
		{"ppm above bound", FreshnessFresh, MaxPressurePPM + 1, true, V, M, ErrOutOfRange},
		{"fresh without ppm", FreshnessFresh, 0, false, V, M, ErrInconsistent},
		{"stale with ppm", FreshnessStale, 5, true, V, M, ErrInconsistent},
		{"unknown with ppm", FreshnessUnknown, 0, true, M, M, ErrInconsistent},
		{"absent ppm nonzero", FreshnessFailed, 3, false, M, M, ErrInconsistent},
		{"fresh with no valid signal", FreshnessFresh, 0, true, M, M, ErrInconsistent},
		{"fresh with an invalid signal", FreshnessFresh, 0, true, V, I, ErrInconsistent},
		{"fresh kv only above 1e6", FreshnessFresh, MaxKVPPM + 1, true, M, V, ErrInconsistent},
		{"stale with no valid signal", FreshnessStale, 0, false, M, M, ErrInconsistent},
		{"stale with an invalid signal", FreshnessStale, 0, false, I, V, ErrInconsistent},
		{"failed with signals", FreshnessFailed, 0, false, V, M, ErrInconsistent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPressure(tt.f, tt.ppm, tt.has, tt.req, tt.kv)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				assert.Equal(t, Pressure{}, p)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.f, p.Freshness())
			ppm, has := p.PPM()
			assert.Equal(t, tt.ppm, ppm)
			assert.Equal(t, tt.has, has)
			assert.Equal(t, tt.req, p.RequestState())
			assert.Equal(t, tt.kv, p.KVState())
			assert.Equal(t, tt.f != FreshnessFresh, p.Unknown())
		})
	}
}

func TestNewCandidate(t *testing.T) {
	p := freshP(t, 7)
	c, err := NewCandidate("m1", true, 3, 4, p)
	require.NoError(t, err)
	assert.Equal(t, "m1", c.MemberID())
	assert.True(t, c.Eligible())
	assert.Equal(t, int64(3), c.Active())
	assert.Equal(t, int64(4), c.Capacity())
	assert.Equal(t, p, c.Pressure())
	assert.True(t, c.Schedulable())

	full := cand(t, "m1", true, 4, 4, p)
	assert.False(t, full.Schedulable(), "active == capacity is full")
	over := cand(t, "m1", true, MaxActive, ident.MaxCeiling, p)
	assert.False(t, over.Schedulable(), "active above capacity is legal and full")
	assert.False(t, cand(t, "m1", false, 0, 4, p).Schedulable())

	tests := []struct {
		name             string
		id               string
		active, capacity int64
		err              error
	}{
		{"bad id", "M1", 0, 1, ErrInvalidID},
		{"empty id", "", 0, 1, ErrInvalidID},
		{"negative active", "m", -1, 1, ErrOutOfRange},
		{"active above 1e9", "m", MaxActive + 1, 1, ErrOutOfRange},
		{"zero capacity", "m", 0, 0, ErrOutOfRange},
		{"capacity above 100000", "m", 0, ident.MaxCeiling + 1, ErrOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCandidate(tt.id, true, tt.active, tt.capacity, p)
			assert.ErrorIs(t, err, tt.err)
			assert.Equal(t, Candidate{}, c)
		})
	}
}

func TestNewScore(t *testing.T) {
	s, err := NewScore("m2", 1, 2, false, 42, true, FreshnessFresh, 15)
	require.NoError(t, err)
	assert.Equal(t, "m2", s.MemberID())
	assert.Equal(t, int64(1), s.LocalActive())
	assert.Equal(t, int64(2), s.LocalCapacity())
	assert.False(t, s.UpstreamUnknown())
	ppm, has := s.UpstreamPressurePPM()
	assert.Equal(t, int64(42), ppm)
	assert.True(t, has)
	assert.Equal(t, FreshnessFresh, s.Freshness())
	assert.Equal(t, 15, s.RotatingRank())

	for _, f := range []Freshness{FreshnessStale, FreshnessFailed, FreshnessUnknown} {
		_, err := NewScore("m", 0, 1, true, 0, false, f, 0)
		assert.NoError(t, err, f.String())
	}

	tests := []struct {
		name             string
		id               string
		active, capacity int64
		unknown          bool
		ppm              int64
		has              bool
		f                Freshness
		rank             int
		err              error
	}{
		{"bad id", "x/y", 0, 1, false, 0, true, FreshnessFresh, 0, ErrInvalidID},
		{"zero capacity", "m", 0, 0, false, 0, true, FreshnessFresh, 0, ErrOutOfRange},
		{"capacity too big", "m", 0, ident.MaxCeiling + 1, false, 0, true, FreshnessFresh, 0, ErrOutOfRange},
		{"negative active", "m", -1, 1, false, 0, true, FreshnessFresh, 0, ErrOutOfRange},
		{"active at capacity", "m", 2, 2, false, 0, true, FreshnessFresh, 0, ErrInconsistent},
		{"negative rank", "m", 0, 1, false, 0, true, FreshnessFresh, -1, ErrOutOfRange},
		{"rank 16", "m", 0, 1, false, 0, true, FreshnessFresh, 16, ErrOutOfRange},
		{"bad freshness", "m", 0, 1, true, 0, false, Freshness(7), 0, ErrOutOfRange},
		{"negative ppm", "m", 0, 1, false, -1, true, FreshnessFresh, 0, ErrOutOfRange},
		{"ppm too big", "m", 0, 1, false, MaxPressurePPM + 1, true, FreshnessFresh, 0, ErrOutOfRange},
		{"fresh marked unknown", "m", 0, 1, true, 0, true, FreshnessFresh, 0, ErrInconsistent},
		{"stale marked known", "m", 0, 1, false, 0, false, FreshnessStale, 0, ErrInconsistent},
		{"fresh without ppm", "m", 0, 1, false, 0, false, FreshnessFresh, 0, ErrInconsistent},
		{"unknown with ppm", "m", 0, 1, true, 0, true, FreshnessUnknown, 0, ErrInconsistent},
		{"absent ppm nonzero", "m", 0, 1, true, 9, false, FreshnessFailed, 0, ErrInconsistent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewScore(tt.id, tt.active, tt.capacity, tt.unknown, tt.ppm, tt.has, tt.f, tt.rank)
			assert.ErrorIs(t, err, tt.err)
			assert.Equal(t, Score{}, s)
		})
	}
}
