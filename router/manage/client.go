package manage

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
)

// TransitionPath is the endpoint every transition goes to.
const TransitionPath = "/admin/v1/transition"

// maxResponseBytes bounds an answer the client reads; a tier snapshot is a few kilobytes.
const maxResponseBytes = 1 << 20

// Doer sends one HTTP request; *http.Client is one.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Client sends transitions to one router with the admin token. It keeps both to itself: nothing it
// returns, results or errors, carries the URL or the token.
type Client struct {
	doer  Doer
	base  string
	token string
}

// Client construction refusals.
var (
	ErrRouterURL = errors.New("router URL must be an http or https URL with a host and no user, query or fragment")
	ErrToken     = errors.New("admin token must be 1-4096 printable characters")
)

// NewClient checks the router URL and the admin token and returns a client sending with doer.
func NewClient(doer Doer, routerURL, token string) (*Client, error) {
	u, err := url.Parse(routerURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, ErrRouterURL
	}
	if !validToken(token) {
		return nil, ErrToken
	}
	return &Client{doer: doer, base: strings.TrimRight(u.String(), "/"), token: token}, nil
}

func validToken(t string) bool {
	if len(t) == 0 || len(t) > 4096 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] >= 0x7f {
			return false
		}
	}
	return true
}

// Refusal is the router's fixed refusal of a transition: its HTTP status, code and message, and for
// a drain that timed out the scope's remaining active requests.
type Refusal struct {
	Status  int
	Code    string
	Message string
	Active  *int64 // drain_timeout only
}

func (r *Refusal) Error() string {
	msg := r.Message
	if r.Active != nil {
		msg = fmt.Sprintf("%s (%d still active)", msg, *r.Active)
	}
	return fmt.Sprintf("%s [%s]", msg, r.Code)
}

// TransportError is a failure to get an answer from the router, by class; it never carries the
// URL or the underlying error's text, which may.
type TransportError struct{ Class string }

func (e *TransportError) Error() string { return "could not reach the router: " + e.Class }

// Transport classes.
const (
	TransportRefused  = "connection refused"
	TransportTimeout  = "timed out"
	TransportTLS      = "TLS handshake or certificate failure"
	TransportCanceled = "canceled"
	TransportOther    = "transport failure"
	TransportBadReply = "the answer is not a transition response"
)

// Transition validates req, sends it and returns the router's answer: a Response, a *Refusal
// carrying the router's fixed code and message, a *Problem when req is invalid (nothing was sent),
// or a *TransportError.
func (c *Client) Transition(ctx context.Context, req Request) (Response, error) {
	if err := req.Validate(); err != nil {
		return Response{}, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+TransitionPath, bytes.NewReader(req.Encode()))
	if err != nil {
		return Response{}, &TransportError{TransportOther}
	}
	hr.Header.Set("Authorization", "Bearer "+c.token)
	hr.Header.Set("Content-Type", "application/json")
	resp, err := c.doer.Do(hr)
	if err != nil {
		return Response{}, Transport(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return Response{}, Transport(ctx, err)
	}
	if len(body) > maxResponseBytes {
		return Response{}, &TransportError{TransportBadReply}
	}
	if resp.StatusCode != http.StatusOK {
		return Response{}, refusal(resp.StatusCode, body)
	}
	var out Response
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil || !out.valid() || out.Tier != req.Tier || out.Action != req.Action ||
		out.MemberID != req.MemberID || out.DryRun != req.DryRun {
		return Response{}, &TransportError{TransportBadReply}
	}
	return out, nil
}

// refusal reads the router's OpenAI-shaped error body. A code or message outside the fixed forms the
// router uses is replaced, so a client never prints arbitrary bytes.
func refusal(status int, body []byte) *Refusal {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
			Active  *int64 `json:"active_requests"`
		} `json:"error"`
	}
	r := &Refusal{Status: status, Code: "http_" + fmt.Sprint(status), Message: fmt.Sprintf("the router refused the transition (HTTP %d)", status)}
	if json.Unmarshal(body, &e) != nil {
		return r
	}
	if fixedCode(e.Error.Code) && fixedMessage(e.Error.Message) {
		r.Code, r.Message = e.Error.Code, e.Error.Message
	}
	if e.Error.Active != nil && *e.Error.Active >= 0 {
		r.Active = e.Error.Active
	}
	return r
}

func fixedCode(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c == '_') {
			return false
		}
	}
	return true
}

func fixedMessage(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// Transport classifies a failure to get an answer from an HTTP server (a Do or a body read under
// ctx) as a *TransportError: its class only, never the error's text, which names the URL. Other
// clients of the router's admin API (anvil-qualify) report their failures the same way.
func Transport(ctx context.Context, err error) *TransportError {
	return &TransportError{classify(ctx, err)}
}

func classify(ctx context.Context, err error) string {
	var cert x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	var nerr net.Error
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return TransportCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return TransportTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return TransportRefused
	case errors.As(err, &cert), errors.As(err, &host), errors.As(err, &invalid), errors.As(err, &record):
		return TransportTLS
	}
	return TransportOther
}
