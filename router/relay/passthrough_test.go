package relay

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// abortOnCut is what router/server does with a cut pass-through body.
func abortOnCut(_ http.ResponseWriter, res Result) {
	if res.Cut {
		panic(http.ErrAbortHandler)
	}
}

func passThroughFront(t *testing.T, u *upstream, opts Options) *front {
	t.Helper()
	return frontWith(t, New(nil, opts), func(r *http.Request) Upstream {
		_, _ = io.Copy(io.Discard, r.Body)
		return Upstream{BaseURL: u.URL, Path: "/v1/audio/speech", Body: []byte(`{"model":"m","input":"hi"}`), PassThrough: true}
	}, abortOnCut)
}

// TestPassThroughRelaysEachReadBeforeTheNextExists proves the bytes are relayed as they come: the
// upstream writes piece k+1 only after the client has received piece k, so a relay that buffered the
// body would deadlock the test.
func TestPassThroughRelaysEachReadBeforeTheNextExists(t *testing.T) {
	for _, withLength := range []bool{true, false} {
		t.Run("content-length="+strconv.FormatBool(withLength), func(t *testing.T) {
			const n, piece = 4, "RIFFdata"
			next := make(chan struct{})
			u := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "audio/wav")
				if withLength {
					w.Header().Set("Content-Length", strconv.Itoa(n*len(piece)))
				}
				for k := range n {
					flushWrite(w, piece)
					if k < n-1 {
						select {
						case <-next:
						case <-r.Context().Done():
							return
						}
					}
				}
			})
			f := passThroughFront(t, u, Options{})
			resp, err := f.post(t, guardCtx(t))
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "audio/wav", resp.Header.Get("Content-Type"))
			if withLength {
				assert.Equal(t, int64(n*len(piece)), resp.ContentLength)
			}
			br := bufio.NewReader(resp.Body)
			for k := range n {
				got := make(chan string, 1)
				go func() {
					b := make([]byte, len(piece))
					_, err := io.ReadFull(br, b)
					if err != nil {
						got <- err.Error()
						return
					}
					got <- string(b)
				}()
				assert.Equal(t, piece, recv(t, got, fmt.Sprintf("piece %d", k)))
				if k < n-1 {
					next <- struct{}{}
				}
			}
			rest, err := io.ReadAll(br)
			require.NoError(t, err)
			assert.Empty(t, rest)
			res := recv(t, f.results, "relay result")
			assert.Equal(t, decisionlog.OutcomeSuccess, res.Outcome)
			assert.Equal(t, http.StatusOK, res.Status)
			assert.False(t, res.Cut)
			assertOneCall(t, u, res)
		})
	}
}

// TestPassThroughEndings: a body cut short is a truncated response the client sees broken (the
// connection is aborted, never ended cleanly); one over the response bound is refused before
// anything is written when announced and cut when it grows past; an error answer stays buffered and
// passes through whole.
func TestPassThroughEndings(t *testing.T) {
	tests := []struct {
		name     string
		upstream func(http.ResponseWriter, *http.Request)
		max      int64
		status   int
		body     string
		broken   bool // the client's read fails instead of ending cleanly
		outcome  decisionlog.Outcome
		err      error
		cut      bool
	}{
		{"short of its length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			flushWrite(w, "only ten b")
		}, 0, 200, "only ten b", true, decisionlog.OutcomeStreamTruncated, ErrTruncated, true},
		{"chunked and reset", func(w http.ResponseWriter, r *http.Request) {
			flushWrite(w, "some bytes")
			panic(http.ErrAbortHandler)
		}, 0, 200, "some bytes", true, decisionlog.OutcomeStreamTruncated, ErrTruncated, true},
		{"announced over the bound", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "2048")
			_, _ = io.WriteString(w, strings.Repeat("x", 2048))
		}, 1024, 502, `{"error":{"message":"the upstream response exceeded the size limit","type":"upstream_error","param":null,"code":"upstream_transport_error"}}`,
			false, decisionlog.OutcomeUpstreamTransportError, ErrResponseTooLarge, false},
		{"grows past the bound", func(w http.ResponseWriter, r *http.Request) {
			for range 3 {
				flushWrite(w, strings.Repeat("y", 512))
			}
		}, 1024, 200, strings.Repeat("y", 1024), true, decisionlog.OutcomeUpstreamTransportError, ErrResponseTooLarge, true},
		{"error answer buffered", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"bad voice"}}`)
		}, 0, 400, `{"error":{"message":"bad voice"}}`, false, decisionlog.OutcomeUpstreamHTTPError, ErrUpstreamStatus, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t, tc.upstream)
			f := passThroughFront(t, u, Options{MaxResponseBytes: tc.max})
			resp, err := f.post(t, guardCtx(t))
			var body []byte
			var rerr error
			switch {
			case err != nil && tc.broken:
				// Aborted before the headers left the router's buffer: broken before the status.
				rerr = err
			default:
				require.NoError(t, err)
				body, rerr = io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				assert.Equal(t, tc.status, resp.StatusCode)
			}
			if tc.broken {
				assert.Error(t, rerr, "the client must see a broken response")
				assert.True(t, strings.HasPrefix(tc.body, string(body)) || string(body) == tc.body, "got %q", body)
			} else {
				require.NoError(t, rerr)
				assert.Equal(t, tc.body, string(body))
			}
			res := recv(t, f.results, "relay result")
			assert.Equal(t, tc.outcome, res.Outcome)
			assert.ErrorIs(t, res.Err, tc.err)
			assert.Equal(t, tc.cut, res.Cut)
			assert.Equal(t, tc.status, res.Status)
			assertOneCall(t, u, res)
		})
	}
}
