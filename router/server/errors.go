package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/routing"
)

// apiError is one fixed, OpenAI-shaped refusal. Messages never echo caller input, upstream addresses or
// raw Go errors.
type apiError struct {
	status  int
	message string
	kind    string // OpenAI "type"
	code    string
}

var (
	errUnauthenticated = apiError{http.StatusUnauthorized, "missing or invalid bearer token", "authentication_error", "invalid_api_key"}
	errForbiddenAdmin  = apiError{http.StatusUnauthorized, "missing or invalid admin token", "authentication_error", "invalid_admin_token"}
	errReadOnly        = apiError{http.StatusForbidden, "an observer token may only read; this route needs the admin token", "permission_error", "insufficient_role"}
	errTooLarge        = apiError{http.StatusRequestEntityTooLarge, "request body is too large", "invalid_request_error", "request_too_large"}
	errBusy            = apiError{http.StatusServiceUnavailable, "the router is reading too many request bodies right now; retry shortly", "service_unavailable", "body_budget_exhausted"}
	errCallerBusy      = apiError{http.StatusServiceUnavailable, "this caller's request bodies already hold its share of the router's body budget; retry shortly", "service_unavailable", "caller_body_share_exhausted"}
	errTooSlow         = apiError{http.StatusRequestTimeout, "request body arrived slower than the router's minimum upload rate", "invalid_request_error", "upload_too_slow"}
	errUnreadable      = apiError{http.StatusBadRequest, "request body could not be read", "invalid_request_error", "invalid_body"}
	errUnknownAlias    = apiError{http.StatusNotFound, routing.ErrUnknownAlias.Error(), "invalid_request_error", "model_not_found"}
	errQuiesced        = apiError{http.StatusServiceUnavailable, "the model is not admitting requests right now", "service_unavailable", "quiesced"}
	errExhausted       = apiError{http.StatusServiceUnavailable, "the model is at capacity; retry shortly", "service_unavailable", "capacity_exhausted"}
	errShuttingDown    = apiError{http.StatusServiceUnavailable, "the router is shutting down; retry shortly", "service_unavailable", "shutting_down"}
	errInternal        = apiError{http.StatusInternalServerError, "internal error", "server_error", "internal_error"}
	errNotFound        = apiError{http.StatusNotFound, "no such route", "invalid_request_error", "not_found"}
	errMethod          = apiError{http.StatusMethodNotAllowed, "method not allowed", "invalid_request_error", "method_not_allowed"}
)

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
	Active  *int64  `json:"active_requests,omitempty"` // drain_timeout: the scope's remaining leases
}

func abort(c *gin.Context, e apiError) { abortWith(c, e, nil) }

// abortWith answers e, with the scope's remaining active requests for a drain that timed out.
func abortWith(c *gin.Context, e apiError, active *int64) {
	if e.status == http.StatusServiceUnavailable {
		c.Header("Retry-After", strconv.Itoa(int(routing.RetryAfter/time.Second)))
	}
	if e.status == http.StatusUnauthorized {
		c.Header("WWW-Authenticate", `Bearer realm="anvil"`)
	}
	refusedSpan(c, e.code)
	body, err := json.Marshal(errorBody{errorDetail{Message: e.message, Type: e.kind, Code: e.code, Active: active}})
	if err != nil { // strings and an integer: cannot happen
		panic(err)
	}
	// A stated length ends the answer where it ends, even when the connection lingers on an upload
	// after it (linger.go): a caller that stops sending at the answer need not wait for the close.
	c.Header("Content-Length", strconv.Itoa(len(body)))
	c.Data(e.status, "application/json; charset=utf-8", body)
	c.Abort()
}
