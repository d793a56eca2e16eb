package manage_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/manage"
)

// TestConfigAndReloadAgainstARealRouter: the client reads the configuration status and sends the
// reload; a router started without a config file refuses it with the fixed code and says why, and
// the status then shows the refused attempt.
func TestConfigAndReloadAgainstARealRouter(t *testing.T) {
	e := startEphemeral(t)
	c, err := manage.NewClient(http.DefaultClient, e.url, adminToken)
	require.NoError(t, err)
	st, err := c.Config(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(1), st.Generation)
	assert.Nil(t, st.LastReload)

	_, err = c.Reload(context.Background())
	var ref *manage.Refusal
	require.ErrorAs(t, err, &ref)
	assert.Equal(t, http.StatusUnprocessableEntity, ref.Status)
	assert.Equal(t, manage.ReloadRefusedCode, ref.Code)
	assert.Contains(t, ref.Message, "config file")

	st, err = c.Config(context.Background())
	require.NoError(t, err)
	require.NotNil(t, st.LastReload)
	assert.Equal(t, manage.ReloadRefused, st.LastReload.Result)
	assert.Equal(t, uint64(1), st.Generation, "nothing changed")
}

// TestReloadAnswersAreChecked: an answer outside the wire shapes is a bad reply, never rendered.
func TestReloadAnswersAreChecked(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		reload bool
	}{
		{"unknown result", http.StatusOK, `{"result":"maybe","digest":"","generation":1,"changes":[]}`, true},
		{"unknown field", http.StatusOK, `{"result":"applied","digest":"","generation":1,"changes":[],"x":1}`, true},
		{"no generation", http.StatusOK, `{"digest":"","source":"","loaded_at":"2026-01-01T00:00:00Z","generation":0,"last_reload":null}`, false},
		{"kept tier not an ID", http.StatusOK, `{"digest":"","source":"","loaded_at":"2026-01-01T00:00:00Z","generation":1,"last_reload":null,"kept_tiers":["Bad Tier"]}`, false},
		{"kept tiers out of order", http.StatusOK, `{"digest":"","source":"","loaded_at":"2026-01-01T00:00:00Z","generation":1,"last_reload":null,"kept_tiers":["b","a"]}`, false},
		{"kept tier repeated", http.StatusOK, `{"digest":"","source":"","loaded_at":"2026-01-01T00:00:00Z","generation":1,"last_reload":null,"kept_tiers":["a","a"]}`, false},
		{"refusal with a foreign code", http.StatusUnprocessableEntity, `{"error":{"message":"\u001b[31mboom","code":"other"}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c, err := manage.NewClient(http.DefaultClient, srv.URL, adminToken)
			require.NoError(t, err)
			if tt.reload {
				_, err = c.Reload(context.Background())
			} else {
				_, err = c.Config(context.Background())
			}
			var te *manage.TransportError
			var ref *manage.Refusal
			switch {
			case errors.As(err, &te):
				assert.Equal(t, manage.TransportBadReply, te.Class)
			case errors.As(err, &ref):
				assert.Equal(t, manage.ReloadRefusedCode, ref.Code)
				assert.Equal(t, "the router refused the configuration", ref.Message, "foreign text is never shown")
			default:
				t.Fatalf("err = %v", err)
			}
		})
	}
}
