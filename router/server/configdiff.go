package server

import "github.com/anvil-llm/anvil/router/config"

// ConfigDiff is the DiffFunc anvil-router serve plugs in: a change that needs a restart
// (config.RestartRequired) refuses the file whole, with config's text ("config: KEY: restart
// required") wrapping both config.ErrRestartRequired and ErrRestartRequired; otherwise the reload
// answers and records config.Diff's lines (key paths, list entries by ID, no secret values).
func ConfigDiff(running, next config.Config) ([]string, error) {
	if err := config.RestartRequired(running, next); err != nil {
		return nil, restartError{err}
	}
	changes := config.Diff(running, next)
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.String()
	}
	return out, nil
}

// restartError keeps config's text and wraps this package's sentinel too.
type restartError struct{ err error }

func (e restartError) Error() string   { return e.err.Error() }
func (e restartError) Unwrap() []error { return []error{e.err, ErrRestartRequired} }
