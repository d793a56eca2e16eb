package watch

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCore walks the Core through poll sequences: each step is a fingerprint and, when the Core
// asks for a reload, whether that reload is refused.
func TestCore(t *testing.T) {
	type step struct {
		fp     string
		reload bool // the Core must ask for a reload here
		refuse bool // and the reload is then refused
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"unchanged never reloads", []step{{"A", false, false}, {"A", false, false}, {"A", false, false}}},
		{"a change reloads on its second sighting, once", []step{{"B", false, false}, {"B", true, false}, {"B", false, false}, {"B", false, false}}},
		{"a file still changing waits", []step{{"B1", false, false}, {"B2", false, false}, {"B3", false, false}, {"B3", true, false}}},
		{"a refused fingerprint is not retried", []step{{"B", false, false}, {"B", true, true}, {"B", false, false}, {"B", false, false}}},
		{"until the file changes again", []step{{"B", false, false}, {"B", true, true}, {"C", false, false}, {"C", true, false}}},
		{"back to the running file after a refusal", []step{{"B", false, false}, {"B", true, true}, {"A", false, false}, {"A", false, false}}},
		{"a refused fingerprint stays refused across a flap", []step{{"B", false, false}, {"B", true, true}, {"C", false, false}, {"B", false, false}, {"B", false, false}}},
		{"a flap back before settling does nothing", []step{{"B", false, false}, {"A", false, false}, {"B", false, false}, {"A", false, false}}},
		{"a change after an applied one", []step{{"B", false, false}, {"B", true, false}, {"C", false, false}, {"C", true, false}, {"A", false, false}, {"A", true, false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCore("A")
			for i, s := range tc.steps {
				got := c.Observe(s.fp)
				assert.Equalf(t, s.reload, got, "step %d (%s)", i, s.fp)
				if got {
					var err error
					if s.refuse {
						err = errors.New("refused")
					}
					c.Reloaded(s.fp, err)
				}
			}
		})
	}
}
