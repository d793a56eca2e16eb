package server

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/anvil-llm/anvil/router/audioform"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/spool"
)

// TestHoldRefused: every refusal of a held file maps to its answer and the reason it is counted
// under; what is not a hold's refusal is not mapped.
func TestHoldRefused(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		want   apiError
		reason string
	}{
		{"spill budget", &holdError{spillRefused(budgetExhausted)}, errSpillBusy, bodyRefusedSpill},
		{"spill share", &holdError{spillRefused(budgetCallerShare)}, errCallerSpillBusy, bodyRefusedSpillShare},
		{"memory budget", &holdError{memoryRefused(budgetExhausted)}, errBusy, bodyRefusedBudget},
		{"memory share", &holdError{memoryRefused(budgetCallerShare)}, errCallerBusy, bodyRefusedShare},
		{"spill off", &holdError{spool.ErrSpillOff}, errHeldTooLarge, ""},
		{"spool closed", &holdError{spool.ErrClosed}, errShuttingDown, ""},
		{"the disk", &holdError{fmt.Errorf("spool: %w", fs.ErrPermission)}, errInternal, ""},
		{"wrapped", fmt.Errorf("reading: %w", &holdError{spillRefused(budgetExhausted)}), errSpillBusy, bodyRefusedSpill},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, reason, ok := holdRefused(c.err)
			assert.True(t, ok)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.reason, reason)
			assert.Equal(t, c.want, formError(c.err), "formError agrees")
		})
	}
	_, _, ok := holdRefused(errors.New("not a hold's"))
	assert.False(t, ok)
	_, _, ok = holdRefused(spool.ErrSpillOff)
	assert.False(t, ok, "only a refusal of the hold's Write is one")
}

// TestHeldReadRefused: a held file the router cannot read back while it sends it is its own failure
// (500), or a shutdown's (503 shutting_down) when the spool was closed under it; never the caller's
// 400.
func TestHeldReadRefused(t *testing.T) {
	disk := fmt.Errorf("%w: %w", audioform.ErrHeldRead, fs.ErrPermission)
	closed := fmt.Errorf("%w: %w", audioform.ErrHeldRead, spool.ErrClosed)
	assert.Equal(t, errInternal, formError(disk))
	assert.Equal(t, errShuttingDown, formError(closed))
}

// TestSpillFloor: the least spill share is whole steps holding one max_audio_bytes upload, and the
// least max_spill_bytes the config accepts is one step.
func TestSpillFloor(t *testing.T) {
	assert.Equal(t, int64(spool.SpillStep), spillFloor(1024))
	assert.Equal(t, int64(spool.SpillStep), spillFloor(spool.SpillStep))
	assert.Equal(t, int64(3*spool.SpillStep), spillFloor(2*spool.SpillStep+1))
	assert.Equal(t, int64(spool.SpillStep), int64(config.MinSpillBytes))
}
