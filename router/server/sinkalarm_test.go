package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// fullDisk fails every write with ENOSPC until healed, and can hold writes (a stalled disk).
type fullDisk struct {
	mu     sync.Mutex
	healed bool
	hold   chan struct{} // nil: writes do not wait
}

func (d *fullDisk) Write(p []byte) (int, error) {
	d.mu.Lock()
	hold, healed := d.hold, d.healed
	d.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if !healed {
		return 0, &os.PathError{Op: "write", Path: "/var/log/anvil/decisions.jsonl", Err: syscall.ENOSPC}
	}
	return len(p), nil
}

func (d *fullDisk) set(f func(*fullDisk)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(d)
}

// logLines parses a JSON log buffer into its lines' messages and attributes.
func logLines(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		out = append(out, m)
	}
	return out
}

func records(t *testing.T, l *decisionlog.Log, n int) {
	t.Helper()
	for range n {
		require.NoError(t, l.Add(decisionlog.Record{RequestID: "r", Start: time.Now(), Outcome: decisionlog.OutcomeRefused, Status: 404}))
	}
}

// TestSinkAlarmLogsWhileFailuresHappen: on a full disk behind the server's asynchronous queue, the first
// failed write is logged at once, later ones at most once per summary interval with their count, and
// recovery once; fake time, no sleeps.
func TestSinkAlarmLogsWhileFailuresHappen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		alarm := newSinkAlarm(slog.New(slog.NewJSONHandler(&buf, nil)), sinkSummaryEvery)
		disk := &fullDisk{}
		l, err := decisionlog.New(64, disk, decisionlog.WithAsyncSink(64), decisionlog.WithSinkHealth(time.Now, alarm.observe))
		require.NoError(t, err)
		l.Start()
		start := time.Now()

		records(t, l, 10)
		synctest.Wait()
		lines := logLines(t, &buf)
		require.Len(t, lines, 1, "one line when the failures start, not one per line")
		assert.Equal(t, "decision sink write failed; decision lines are being lost", lines[0]["msg"])
		assert.Equal(t, "WARN", lines[0]["level"])
		assert.Contains(t, lines[0]["error"], "no space left on device")
		assert.Equal(t, start, l.Stats().SinkFailingSince)

		<-time.After(sinkSummaryEvery / 2)
		records(t, l, 10)
		synctest.Wait()
		assert.Len(t, logLines(t, &buf), 1, "no summary before the interval")

		<-time.After(sinkSummaryEvery / 2)
		records(t, l, 1)
		synctest.Wait()
		lines = logLines(t, &buf)
		require.Len(t, lines, 2)
		assert.Equal(t, "decision sink still losing lines", lines[1]["msg"])
		assert.EqualValues(t, 20, lines[1]["failed_writes_since_last_report"], "every failure after the first is counted")

		disk.set(func(d *fullDisk) { d.healed = true })
		records(t, l, 3)
		synctest.Wait()
		lines = logLines(t, &buf)
		require.Len(t, lines, 3)
		assert.Equal(t, "decision sink writing again", lines[2]["msg"])
		assert.True(t, l.Stats().SinkFailingSince.IsZero())
		assert.Equal(t, uint64(21), l.Stats().SinkErrors)
		assert.Equal(t, uint64(3), l.Stats().SinkLines)

		// A stalled disk: the queue fills and lines are dropped. The first drop is logged at once.
		hold := make(chan struct{})
		disk.set(func(d *fullDisk) { d.hold = hold })
		records(t, l, 1)
		synctest.Wait() // the writer holds that line on the stalled disk
		records(t, l, 64+5)
		lines = logLines(t, &buf)
		require.Len(t, lines, 4)
		assert.Equal(t, "decision sink queue full; decision lines are being dropped", lines[3]["msg"])
		assert.Equal(t, uint64(5), l.Stats().SinkDropped)
		close(hold)
		require.NoError(t, l.Close())
	})
}
