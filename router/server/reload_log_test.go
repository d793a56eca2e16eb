package server_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

// syncBuffer is a log sink the test reads while the server may write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// TestRefusedReloadIsLoggedOncePerDistinctFailure: the same refusal repeated (a watcher or an
// operator retrying a broken file) is logged once; a different one is logged; after a success the
// first failure is news again.
func TestRefusedReloadIsLoggedOncePerDistinctFailure(t *testing.T) {
	ms := startMembers(t, 2)
	cfg, err := load.Parse([]byte(replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2})), env)
	require.NoError(t, err)
	var logs syncBuffer
	errA, errB := errors.New("tiers.replicas: failure A"), errors.New("tiers.replicas: failure B")
	next := errA
	srv, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Load: func(context.Context) (config.Config, string, error) {
			if next != nil {
				return config.Config{}, "", next
			}
			return cfg, strings.Repeat("a", 64), nil
		}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })

	const refusedLine = "config reload refused"
	for _, step := range []struct {
		name string
		err  error
		want int // refusal lines logged so far
	}{
		{"first failure", errA, 1},
		{"the same again", errA, 1},
		{"and again", errA, 1},
		{"a different failure", errB, 2},
		{"the first one back", errA, 3},
		{"a success", nil, 3},
		{"the first failure after the success", errA, 4},
	} {
		next = step.err
		_, err := srv.ReloadFile(context.Background())
		if step.err != nil {
			require.ErrorIs(t, err, server.ErrReloadRefused, step.name)
		} else {
			require.NoError(t, err, step.name)
		}
		assert.Equal(t, step.want, logs.count(refusedLine), step.name)
	}
}
