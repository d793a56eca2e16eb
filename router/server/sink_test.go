package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

// watchedLog is a log destination that announces every write, so a test can wait for a line.
type watchedLog struct {
	lockedBuffer
	wrote chan struct{}
}

func (w *watchedLog) Write(p []byte) (int, error) {
	n, err := w.lockedBuffer.Write(p)
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (w *watchedLog) waitFor(t *testing.T, text string) {
	t.Helper()
	for !strings.Contains(w.String(), text) {
		select {
		case <-w.wrote:
		case <-time.After(30 * time.Second):
			t.Fatalf("no log line %q in %s", text, w.String())
		}
	}
}

// openDevice opens a device for appending, as the server's own open would not.
func openDevice(path string) (*os.File, error) { return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0) }

// TestFullDiskSinkIsVisibleAndMakesTheRouterUnready: decision_log.jsonl_path on /dev/full (every write
// fails with ENOSPC) through the real config path. The first lost line is logged while the router
// runs, the failure is counted, and /readyz turns 503 once the sink has failed for longer than
// decision_log.unready_after, by the server's clock.
func TestFullDiskSinkIsVisibleAndMakesTheRouterUnready(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		unready     bool
	}{
		{"unready after 10s", "  unready_after: 10s\n", true},
		{"never unready by default", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms := startMembers(t, 2)
			cfg, err := load.Parse([]byte(replicaYAML(ms, tierOpts{extra: "decision_log:\n  jsonl_path: /dev/full\n" + c.extra})), env)
			require.NoError(t, err)
			t0 := time.Unix(1_700_000_000, 0)
			var clock atomic.Int64
			now := func() time.Time { return t0.Add(time.Duration(clock.Load())) }
			logs := &watchedLog{wrote: make(chan struct{}, 1)}
			srv, err := server.New(cfg, server.Options{Now: now, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
				OpenDecisionFile: openDevice}) // the server's own open refuses a device
			require.NoError(t, err)
			t.Cleanup(func() { _ = srv.Close() })
			srv.Start()
			srv.ProbeNow(context.Background())
			front := httptest.NewServer(srv.Handler())
			defer front.Close()
			ready := func() (int, []string) {
				resp, err := http.Get(front.URL + "/readyz")
				require.NoError(t, err)
				defer resp.Body.Close()
				var out struct{ Reasons []string }
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(b, &out))
				return resp.StatusCode, out.Reasons
			}
			status, _ := ready()
			require.Equal(t, http.StatusOK, status)

			req, _ := http.NewRequest(http.MethodPost, front.URL+"/v1/chat/completions", strings.NewReader(`{"model":"nope","messages":[{"content":"a"}]}`))
			req.Header.Set("Authorization", "Bearer "+callerToken)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			logs.waitFor(t, "decision sink write failed; decision lines are being lost")
			assert.Contains(t, logs.String(), "no space left on device")
			st := srv.Decisions().Stats()
			assert.Equal(t, uint64(1), st.SinkErrors)
			assert.Equal(t, t0, st.SinkFailingSince)

			clock.Store(int64(10 * time.Second))
			status, _ = ready()
			assert.Equal(t, http.StatusOK, status, "failing for exactly unready_after is still ready")
			clock.Store(int64(10*time.Second + 1))
			status, reasons := ready()
			if c.unready {
				assert.Equal(t, http.StatusServiceUnavailable, status)
				assert.Equal(t, []string{"decision_sink_failing"}, reasons)
			} else {
				assert.Equal(t, http.StatusOK, status)
				clock.Store(int64(24 * time.Hour))
				status, _ = ready()
				assert.Equal(t, http.StatusOK, status)
			}
		})
	}
}
