package manage

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/anvil-llm/anvil/router/ident"
)

// The live configuration's admin API: POST ReloadPath reloads the router's config file (the same
// reload as SIGHUP), GET ConfigPath describes the configuration in force and the last reload
// attempt. Both need the admin token.
const (
	ReloadPath = "/admin/v1/config/reload"
	ConfigPath = "/admin/v1/config"
)

// Results of a reload, in ReloadResponse.Result and LastReload.Result.
const (
	ReloadApplied   = "applied"   // a new generation is in force
	ReloadUnchanged = "unchanged" // the file's digest equals the running config's: nothing was touched
	ReloadRefused   = "refused"   // the file (or applying it) was refused: the running config keeps serving
)

// ReloadRefusedCode is the fixed error code of a refused reload (HTTP 422). The error's message is
// the configuration error's text, as `anvil-router config check` prints it (key paths, never secret
// values).
const ReloadRefusedCode = "config_refused"

// ReloadResponse is the 200 answer of POST ReloadPath.
type ReloadResponse struct {
	Result     string   `json:"result"`     // ReloadApplied or ReloadUnchanged
	Digest     string   `json:"digest"`     // sha256 hex of the file now in force
	Generation uint64   `json:"generation"` // the generation in force: 1 at startup, one more per applied reload
	Changes    []string `json:"changes"`    // what the reload changed, by key path; empty when unchanged
}

// LastReload is the last reload attempt, whatever its result.
type LastReload struct {
	Time    time.Time `json:"time"`
	Result  string    `json:"result"`
	Changes []string  `json:"changes"`
	Error   string    `json:"error,omitempty"` // the refusal's text; "" unless refused
}

// ConfigStatus is the answer of GET ConfigPath: the configuration in force and the last reload
// attempt (null before the first).
type ConfigStatus struct {
	Digest     string      `json:"digest"`      // sha256 hex of the file in force; "" when it came from no file
	Source     string      `json:"source"`      // the config file's path; "" when none
	LoadedAt   time.Time   `json:"loaded_at"`   // when the configuration in force was applied
	Generation uint64      `json:"generation"`  // 1 at startup, one more per applied reload
	LastReload *LastReload `json:"last_reload"` // null until the first reload attempt
	// KeptTiers lists, in ID order, the tiers the configuration in force does not have whose quiesce
	// intent (the tier's own or its members') the router keeps; omitted when none. The all-tier
	// status (Client.StatusAll) shows them after the configured tiers.
	KeptTiers []string `json:"kept_tiers,omitempty"`
}

func validReloadResult(r string, refusedOK bool) bool {
	return r == ReloadApplied || r == ReloadUnchanged || refusedOK && r == ReloadRefused
}

// Reload asks the router to reload its config file and returns its answer: a ReloadResponse, a
// *Refusal (a refused file: code ReloadRefusedCode, the configuration error as its message) or a
// *TransportError.
func (c *Client) Reload(ctx context.Context) (ReloadResponse, error) {
	var out ReloadResponse
	err := c.call(ctx, http.MethodPost, ReloadPath, []byte("{}"), &out)
	if err != nil {
		return ReloadResponse{}, err
	}
	if !validReloadResult(out.Result, false) || out.Generation == 0 {
		return ReloadResponse{}, &TransportError{TransportBadReply}
	}
	return out, nil
}

// Config reads the router's configuration status.
func (c *Client) Config(ctx context.Context) (ConfigStatus, error) {
	var out ConfigStatus
	if err := c.call(ctx, http.MethodGet, ConfigPath, nil, &out); err != nil {
		return ConfigStatus{}, err
	}
	if out.Generation == 0 || out.LastReload != nil && !validReloadResult(out.LastReload.Result, true) ||
		!validKeptTiers(out.KeptTiers) {
		return ConfigStatus{}, &TransportError{TransportBadReply}
	}
	return out, nil
}

// validKeptTiers: at most ident.MaxKeptIntent tier IDs, strictly ascending (so no repeats).
func validKeptTiers(ids []string) bool {
	if len(ids) > ident.MaxKeptIntent {
		return false
	}
	for i, id := range ids {
		if !ident.ValidID(id) || i > 0 && ids[i-1] >= id {
			return false
		}
	}
	return true
}

// call sends one admin request and decodes a 200 answer strictly into out.
func (c *Client) call(ctx context.Context, method, path string, body []byte, out any) error {
	data, err := c.fetch(ctx, method, path, body)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return &TransportError{TransportBadReply}
	}
	return nil
}

// fetch sends one admin request and returns the body of its 200 answer, bounded; any other answer
// is a *Refusal, a failed exchange a *TransportError.
func (c *Client) fetch(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, &TransportError{TransportOther}
	}
	hr.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.doer.Do(hr)
	if err != nil {
		return nil, Transport(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, Transport(ctx, err)
	}
	if len(data) > maxResponseBytes {
		return nil, &TransportError{TransportBadReply}
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusUnprocessableEntity {
			return nil, reloadRefusal(data)
		}
		return nil, refusal(resp.StatusCode, data)
	}
	return data, nil
}

// maxReloadError bounds the configuration error text a client shows.
const maxReloadError = 4096

// reloadRefusal reads a refused reload: the fixed code, and the configuration error as its message
// (the router's config check text: key paths and fixed phrases, never a secret), bounded and kept
// to printable characters.
func reloadRefusal(body []byte) *Refusal {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	r := &Refusal{Status: http.StatusUnprocessableEntity, Code: ReloadRefusedCode, Message: "the router refused the configuration"}
	if json.Unmarshal(body, &e) != nil || e.Error.Code != ReloadRefusedCode {
		return r
	}
	if msg := e.Error.Message; msg != "" && len(msg) <= maxReloadError && printable(msg) {
		r.Message = msg
	}
	return r
}

func printable(s string) bool {
	for _, r := range s {
		if r < ' ' && r != '\n' && r != '\t' || r == 0x7f {
			return false
		}
	}
	return true
}
