package server_test

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

// A request queued while a reload changes its tier's served_model is admitted under the new
// configuration: its span's gen_ai.response.model is the model the member was asked for then, not
// the arrival generation's.
func TestResponseModelIsTheAdmittingGenerations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tracingOn = "tracing:\n  endpoint: http://collector:4318\n  sampler: always_on\n"
		exp := tracetest.NewInMemoryExporter()
		rig := startQueueRigWith(t, nil, queueConfig+tracingOn, server.Options{SpanExporter: exp})
		a := rig.send(t.Context(), "req-a")
		synctest.Wait() // a holds the one slot
		b := rig.send(t.Context(), "req-b")
		synctest.Wait() // b waits in the queue, under the arrival generation

		next, err := load.Parse([]byte(strings.Replace(queueConfig, "served_model: test/llama", "served_model: test/llama-v2", 1)+tracingOn), env)
		require.NoError(t, err)
		_, err = rig.srv.Reload(t.Context(), next, "v2")
		require.NoError(t, err)
		synctest.Wait()
		rig.answer("req-a")
		synctest.Wait()
		rig.answer("req-b")
		for _, ch := range []<-chan reply{a, b} {
			r := <-ch
			require.NoError(t, r.err)
			require.Equal(t, http.StatusOK, r.status, r.body)
		}
		synctest.Wait()
		require.NoError(t, rig.srv.FlushTraces(t.Context()))

		models := map[string]string{}
		for _, s := range exp.GetSpans() {
			var id, model string
			for _, kv := range s.Attributes {
				switch kv.Key {
				case "anvil.request_id":
					id = kv.Value.AsString()
				case "gen_ai.response.model":
					model = kv.Value.AsString()
				}
			}
			if id != "" {
				models[id] = model
			}
		}
		assert.Equal(t, "test/llama", models[rig.record(t, "req-a").RequestID])
		assert.Equal(t, "test/llama-v2", models[rig.record(t, "req-b").RequestID], "admitted under the reloaded tier")
	})
}
