// Package mcp serves the router's operator transition as a Model Context Protocol tool,
// router_transition, with the official Go SDK (github.com/modelcontextprotocol/go-sdk). The tool
// is a thin face of router/manage: its arguments are decoded by manage.Decode, the same strict
// grammar the endpoint uses, and sent by the one request function (a manage.Client), so an MCP
// client can do exactly what the CLI verbs do and nothing else. The router URL and the admin token
// are the server's own configuration, never tool arguments, and never appear in results.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/manage"
)

// ToolName is the one tool's name.
const ToolName = "router_transition"

// Transitioner is the one request function the tool calls: *manage.Client.
type Transitioner interface {
	Transition(ctx context.Context, req manage.Request) (manage.Response, error)
}

// The description's parts. MemberWording is the member-aware sentence: the catalog's compatibility
// test removes exactly it (with the member_id property) to rebuild the member-unaware catalog.
const (
	descriptionBase = "Run one admission transition on a tier of the Anvil router this server is configured " +
		"for: status reads the scope's state, quiesce stops new admissions (in-flight requests continue), drain " +
		"waits until a quiesced scope holds no request (never cancelling one; wait_seconds, default 60), " +
		"readmit admits again."
	MemberWording = " With member_id, the transition addresses only that declared member of a replica tier " +
		"(omit it to address the whole tier): member readmission probes that member first and never readmits " +
		"the tier, and tier readmission never clears a member's quiesce."
	descriptionTail = " Use dry_run to see what would change. Refusals carry the router's fixed code."
)

// idPattern is the contract's ID grammar (router/ident) as a JSON Schema pattern; the router also
// refuses dotted IPv4 addresses, which the pattern alone admits.
const idPattern = "^[a-z0-9][a-z0-9._-]*$"

// InputSchema returns the tool's closed input schema.
func InputSchema() map[string]any {
	id := func(desc string) map[string]any {
		return map[string]any{"type": "string", "pattern": idPattern, "minLength": 1, "maxLength": ident.MaxIDLength,
			"description": desc}
	}
	props := map[string]any{
		"action": map[string]any{"type": "string", "enum": []any{manage.ActionStatus, manage.ActionQuiesce,
			manage.ActionDrain, manage.ActionReadmit}, "description": "the transition"},
		"tier":      id("tier ID"),
		"member_id": id("member ID of a declared member of a replica tier (ASCII, at most 64 characters); omit it to address the whole tier"),
		"reason": map[string]any{"type": "string", "pattern": idPattern, "minLength": 1, "maxLength": ident.MaxReasonLength,
			"description": "reason code for the audit log; for quiesce the recorded reason (default operator)"},
		"dry_run": map[string]any{"type": "boolean", "description": "report what would change and change nothing"},
		"wait_seconds": map[string]any{"type": "integer", "minimum": 1, "maximum": manage.MaxWaitSeconds,
			"description": "drain only: how long to wait, in seconds (default 60)"},
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             []any{"action", "tier"},
		"additionalProperties": false,
		"maxProperties":        len(props),
	}
}

// Tool returns the router_transition tool as the catalog lists it.
func Tool() *sdk.Tool {
	return &sdk.Tool{
		Name:        ToolName,
		Description: descriptionBase + MemberWording + descriptionTail,
		InputSchema: InputSchema(),
		Annotations: &sdk.ToolAnnotations{Title: "Anvil router transition", DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}
}

func ptr[T any](v T) *T { return &v }

// NewServer returns an MCP server exposing router_transition over t.
func NewServer(t Transitioner, version string) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "anvil-router", Version: version}, nil)
	s.AddTool(Tool(), handler(t))
	return s
}

// ServeStdio serves the tool over standard input and output until the client leaves or ctx ends.
func ServeStdio(ctx context.Context, t Transitioner, version string) error {
	return NewServer(t, version).Run(ctx, &sdk.StdioTransport{})
}

// handler decodes the arguments with the endpoint's own grammar, sends them with the one request
// function and returns the response as structured content (and as JSON text). A refusal, before or
// after transport, is a tool error carrying only fixed text.
func handler(t Transitioner) sdk.ToolHandler {
	return func(ctx context.Context, call *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		req, err := manage.Decode(call.Params.Arguments)
		if err != nil {
			return refused(err), nil
		}
		resp, err := t.Transition(ctx, req)
		if err != nil {
			return refused(err), nil
		}
		text, err := json.Marshal(resp)
		if err != nil {
			return nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(text)}}, StructuredContent: resp}, nil
	}
}

// refused renders a refusal: a manage.Problem's or Refusal's fixed code and message, or a transport
// failure's class. None of them carries the URL or the token.
func refused(err error) *sdk.CallToolResult {
	r := &sdk.CallToolResult{IsError: true}
	r.Content = []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("refused: %v", err)}}
	return r
}
