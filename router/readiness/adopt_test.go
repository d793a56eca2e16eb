package readiness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAdoptKeepsVerdictsByIdentity(t *testing.T) {
	a := Target{Tier: "t", Member: "a", BaseURL: "http://10.0.0.1:1", ServedModel: "m"}
	b := Target{Tier: "t", Member: "b", BaseURL: "http://10.0.0.1:2", ServedModel: "m"}
	tests := []struct {
		name  string
		next  []Target
		want  map[string]bool
		stale bool // recording the old b target must be refused
	}{
		{"unchanged targets keep their verdicts", []Target{a, b}, map[string]bool{"a": true, "b": true}, false},
		{"a moved endpoint is unprobed", []Target{a, {Tier: "t", Member: "b", BaseURL: "http://10.0.0.1:3", ServedModel: "m"}},
			map[string]bool{"a": true, "b": false}, true},
		{"a changed served model is unprobed", []Target{a, {Tier: "t", Member: "b", BaseURL: b.BaseURL, ServedModel: "n"}},
			map[string]bool{"a": true, "b": false}, true},
		{"a new member is unprobed, a removed one forgotten", []Target{a, {Tier: "t", Member: "c", BaseURL: "http://10.0.0.1:4", ServedModel: "m"}},
			map[string]bool{"a": true, "c": false}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewState([]Target{a, b})
			require.NoError(t, s.RecordTarget(a, Ready))
			require.NoError(t, s.RecordTarget(b, Ready))
			s.Adopt(tt.next)
			assert.Equal(t, tt.want, s.Snapshot("t"))
			err := s.RecordTarget(b, Ready)
			if tt.stale {
				require.ErrorIs(t, err, ErrUnknownMember, "a probe of the replaced target says nothing")
				assert.Equal(t, tt.want, s.Snapshot("t"))
			} else {
				require.NoError(t, err)
			}
		})
	}
}
