package server

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/audioform"
	"github.com/anvil-llm/anvil/router/request"
	"github.com/anvil-llm/anvil/router/routing"
)

func badRequest(message, code string) apiError {
	return apiError{http.StatusBadRequest, message, "invalid_request_error", code}
}

// TestRefusalAnswers pins every answer the refusal table gives, wrapped errors and strangers
// included: the table is the switches it replaced, byte for byte.
func TestRefusalAnswers(t *testing.T) {
	wrapped := func(err error) error { return fmt.Errorf("%w: detail", err) }
	fixed := func(err error, code string) apiError { return badRequest(err.Error(), code) }
	t.Run("request", func(t *testing.T) {
		for _, c := range []struct {
			err  error
			want apiError
		}{
			{request.ErrContextExceeded, fixed(request.ErrContextExceeded, "context_length_exceeded")},
			{request.ErrOutputExceeded, fixed(request.ErrOutputExceeded, "max_tokens_exceeded")},
			{request.ErrToolsRefused, fixed(request.ErrToolsRefused, "tools_not_allowed")},
			{request.ErrMediaRefused, fixed(request.ErrMediaRefused, "media_not_allowed")},
			{request.ErrEndpointRefused, fixed(request.ErrEndpointRefused, "endpoint_not_supported")},
			{routing.ErrUnknownAlias, errUnknownAlias},
			{wrapped(routing.ErrUnknownAlias), errUnknownAlias},
			{request.ErrBadJSON, fixed(request.ErrBadJSON, "invalid_request")},
			{request.ErrMissingModel, fixed(request.ErrMissingModel, "invalid_request")},
			{request.ErrBadField, fixed(request.ErrBadField, "invalid_request")},
			{request.ErrMissingInput, fixed(request.ErrMissingInput, "invalid_request")},
			{request.ErrBadMaxTokens, fixed(request.ErrBadMaxTokens, "invalid_request")},
			{request.ErrDuplicateField, fixed(request.ErrDuplicateField, "invalid_request")},
			{request.ErrFoldedKey, fixed(request.ErrFoldedKey, "invalid_request")},
			// A wrapped refusal shows its whole (fixed) text.
			{wrapped(request.ErrBadField), badRequest("request field has the wrong type: detail", "invalid_request")},
			{wrapped(request.ErrToolsRefused), badRequest("this model does not accept tools: detail", "tools_not_allowed")},
			// A gate's code wins over a generic refusal wrapped with it.
			{fmt.Errorf("%w: %w", request.ErrBadJSON, request.ErrMediaRefused),
				badRequest(request.ErrBadJSON.Error()+": "+request.ErrMediaRefused.Error(), "media_not_allowed")},
			// Anything else never shows its text.
			{errors.New("raw upstream text"), badRequest("invalid request", "invalid_request")},
			{admission.ErrQuiesced, badRequest("invalid request", "invalid_request")},
			{nil, badRequest("invalid request", "invalid_request")},
		} {
			assert.Equal(t, c.want, requestError(c.err), "%v", c.err)
		}
	})
	t.Run("admission", func(t *testing.T) {
		for _, c := range []struct {
			err  error
			want apiError
		}{
			{admission.ErrQuiesced, errQuiesced},
			{wrapped(admission.ErrQuiesced), errQuiesced},
			{admission.ErrExhausted, errExhausted},
			{fmt.Errorf("%w: %w", admission.ErrExhausted, admission.ErrQueueFull), errExhausted},
			{fmt.Errorf("%w: %w", admission.ErrExhausted, admission.ErrQueueAhead), errExhausted},
			{routing.ErrQueueTimeout, errExhausted},
			{routing.ErrShuttingDown, errShuttingDown},
			{admission.ErrUnknownTier, errInternal},
			{request.ErrBadJSON, errInternal},
			{errors.New("x"), errInternal},
		} {
			assert.Equal(t, c.want, admissionError(c.err), "%v", c.err)
		}
	})
	t.Run("form", func(t *testing.T) {
		formRules := []error{audioform.ErrNotMultipart, audioform.ErrMalformed, audioform.ErrMissingModel,
			audioform.ErrBadModel, audioform.ErrDuplicateModel, audioform.ErrModelAfterFile, audioform.ErrDuplicateFile,
			audioform.ErrFieldTooLarge, audioform.ErrTooManyParts, audioform.ErrBadPartName}
		for _, err := range formRules {
			assert.Equal(t, badRequest(err.Error(), "invalid_multipart"), formError(err), "%v", err)
			assert.Equal(t, badRequest(err.Error()+": detail", "invalid_multipart"), formError(wrapped(err)), "%v", err)
		}
		assert.Equal(t, errAudioTooLarge, formError(fmt.Errorf("read: %w", &http.MaxBytesError{Limit: 1})))
		assert.Equal(t, errInternal, formError(nil))
		assert.Equal(t, errUnreadable, formError(errors.New("connection reset")))
		assert.Equal(t, errUnreadable, formError(request.ErrBadJSON))
	})
}

// TestRefusalLabels pins the admission refusals metric's reason label of each admission refusal.
func TestRefusalLabels(t *testing.T) {
	for _, c := range []struct {
		err   error
		label string
	}{
		{admission.ErrQuiesced, "quiesced"},
		{fmt.Errorf("%w: tier quiesced", admission.ErrQuiesced), "quiesced"},
		{fmt.Errorf("%w: %w", admission.ErrExhausted, admission.ErrQueueFull), "queue_full"},
		{admission.ErrQueueFull, "queue_full"},
		{routing.ErrQueueTimeout, "queue_timeout"},
		{admission.ErrExhausted, "exhausted"},
		{fmt.Errorf("%w: %w", admission.ErrExhausted, admission.ErrQueueAhead), "exhausted"},
		{routing.ErrShuttingDown, "shutdown"},
		{admission.ErrUnknownTier, "other"},
		{errors.New("x"), "other"},
	} {
		m := newMetrics()
		m.refused("t", c.err)
		assert.Equal(t, 1.0, testutil.ToFloat64(m.refusals.WithLabelValues("t", c.label)), "%v", c.err)
	}
}

// sentinels are the exported sentinel errors of the packages whose refusals the server maps, by
// their qualified names; TestEverySentinelHasARow keeps the list complete from the packages' source.
var sentinels = map[string]error{
	"request.ErrBadField": request.ErrBadField, "request.ErrBadJSON": request.ErrBadJSON,
	"request.ErrBadMaxTokens": request.ErrBadMaxTokens, "request.ErrContextExceeded": request.ErrContextExceeded,
	"request.ErrDuplicateField": request.ErrDuplicateField, "request.ErrEndpointRefused": request.ErrEndpointRefused,
	"request.ErrFoldedKey": request.ErrFoldedKey, "request.ErrMediaRefused": request.ErrMediaRefused,
	"request.ErrMissingInput": request.ErrMissingInput, "request.ErrMissingModel": request.ErrMissingModel,
	"request.ErrOutputExceeded": request.ErrOutputExceeded, "routing.ErrQueueTimeout": routing.ErrQueueTimeout,
	"routing.ErrQueued": routing.ErrQueued, "routing.ErrShuttingDown": routing.ErrShuttingDown,
	"request.ErrToolsRefused": request.ErrToolsRefused, "routing.ErrUnknownAlias": routing.ErrUnknownAlias,

	"admission.ErrExhausted": admission.ErrExhausted, "admission.ErrInvalidReason": admission.ErrInvalidReason,
	"admission.ErrInvalidSnapshot": admission.ErrInvalidSnapshot, "admission.ErrInvalidSpec": admission.ErrInvalidSpec,
	"admission.ErrNoQueue": admission.ErrNoQueue, "admission.ErrNotQuiesced": admission.ErrNotQuiesced,
	"admission.ErrQueueAhead": admission.ErrQueueAhead, "admission.ErrQueueFull": admission.ErrQueueFull,
	"admission.ErrQuiesced": admission.ErrQuiesced, "admission.ErrUnknownMember": admission.ErrUnknownMember,
	"admission.ErrUnknownTier": admission.ErrUnknownTier, "admission.ErrWrongKind": admission.ErrWrongKind,
	"admission.ErrSuperseded": admission.ErrSuperseded, "admission.ErrStale": admission.ErrStale,
	"routing.ErrSuperseded": routing.ErrSuperseded, "routing.ErrNotNext": routing.ErrNotNext,

	"audioform.ErrBadModel": audioform.ErrBadModel, "audioform.ErrBadPartName": audioform.ErrBadPartName,
	"audioform.ErrDuplicateFile": audioform.ErrDuplicateFile, "audioform.ErrDuplicateModel": audioform.ErrDuplicateModel,
	"audioform.ErrFieldTooLarge": audioform.ErrFieldTooLarge, "audioform.ErrMalformed": audioform.ErrMalformed,
	"audioform.ErrHeldRead":     audioform.ErrHeldRead,
	"audioform.ErrMissingModel": audioform.ErrMissingModel, "audioform.ErrModelAfterFile": audioform.ErrModelAfterFile,
	"audioform.ErrNotMultipart": audioform.ErrNotMultipart, "audioform.ErrTooManyParts": audioform.ErrTooManyParts,
}

// noRow are the sentinels the refusal table leaves out, each with the reason.
var noRow = map[string]string{
	"routing.ErrQueued":            "never answered: admit waits in the queue and asks again (front.go)",
	"admission.ErrQueueAhead":      "only ever wrapped with ErrExhausted, whose row answers it (exhausted)",
	"admission.ErrInvalidSnapshot": "a walk bug, answered as an internal error like any stranger",
	"admission.ErrInvalidSpec":     "construction only: a built config never produces it on the request path",
	"admission.ErrUnknownTier":     "the walk admits only configured tiers; the admin API looks tiers up itself (unknown_tier)",
	"admission.ErrUnknownMember":   "the admin API looks members up itself (unknown_member)",
	"admission.ErrWrongKind":       "the admin API checks the tier kind itself (wrong_kind)",
	"admission.ErrNotQuiesced":     "the admin API's drain answers it (not_quiesced, drain_aborted)",
	"admission.ErrInvalidReason":   "the transition grammar validates reasons before admission sees them (router/manage)",
	"admission.ErrNoQueue":         "the walk enqueues only on tiers with a queue",
	"admission.ErrSuperseded":      "never answered: a walk that raced a reload retries under the generation in force (resolveAdmit)",
	"routing.ErrSuperseded":        "admission.ErrSuperseded itself: never answered, the walk retries (resolveAdmit)",
	"admission.ErrStale":           "reload only: a Commit over a superseded generation, never on the request path",
	"routing.ErrNotNext":           "reload only: Publish of a generation Next did not build, never on the request path",
	"audioform.ErrHeldRead":        "the router's own spool, not the caller's form: formRefused answers it 500 (503 shutting_down when the spool closed), TestHeldReadRefused",
}

// exportedSentinels returns pkg.ErrX for every exported package-level Err variable in dir's
// non-test files.
func exportedSentinels(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if n.IsExported() && strings.HasPrefix(n.Name, "Err") {
						out = append(out, f.Name.Name+"."+n.Name)
					}
				}
			}
		}
	}
	return out
}

// TestEverySentinelHasARow: every exported sentinel of routing, admission and audioform has a row in
// the refusal table or a stated reason for having none, never both; a new sentinel fails here until
// it is given one or the other.
func TestEverySentinelHasARow(t *testing.T) {
	var declared []string
	for _, dir := range []string{"../routing", "../request", "../admission", "../audioform"} {
		declared = append(declared, exportedSentinels(t, dir)...)
	}
	listed := make([]string, 0, len(sentinels))
	for name := range sentinels {
		listed = append(listed, name)
	}
	sort.Strings(declared)
	sort.Strings(listed)
	require.Equal(t, declared, listed, "the sentinels declared in the mapped packages")
	for name, err := range sentinels {
		hasRow := slices.ContainsFunc(refusals, func(r refusal) bool { return r.err == err })
		_, excused := noRow[name]
		assert.Truef(t, hasRow != excused, "%s: a row %v, a stated reason %v: exactly one", name, hasRow, excused)
	}
	for name := range noRow {
		assert.Containsf(t, sentinels, name, "a reason for %s, which is not a sentinel", name)
	}
}
