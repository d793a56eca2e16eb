package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/anvil-llm/anvil/router/admission"
)

// errReadmitted ends a drain whose scope was readmitted while it waited.
var errReadmitted = fmt.Errorf("%w: readmitted while draining", admission.ErrNotQuiesced)

// drain waits, cancelling nothing, until the scope (member "" = the tier) holds no lease. It asks
// admission's non-blocking question after every change admission announces. It returns
// admission.ErrNotQuiesced when the scope is not quiesced to begin with, errReadmitted when it is
// readmitted while waiting, and ctx's error, wrapped, when ctx ends first.
func drain(ctx context.Context, t *admission.TierAdmission, member string) error {
	for waited := false; ; waited = true {
		changed := t.Changed()
		idle, err := t.Idle(member)
		switch {
		case errors.Is(err, admission.ErrNotQuiesced) && waited:
			return errReadmitted
		case err != nil:
			return err
		case idle:
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("server: drain of tier %q interrupted: %w", t.ID(), ctx.Err())
		}
	}
}
