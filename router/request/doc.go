// Package request is the router's request parser and its request-wide gates: what the front door
// learns from a caller's body before any tier is touched, and whether a tier may take it. It is
// shared by the server and the simulator (which parses real bodies too), and it is quiet: no
// goroutines, no clock, no printing, no net/http. The walk (router/routing) calls Limits.Check once
// the alias names a tier.
//
// Parse reads a JSON body once, in place, with internal/jsonscan: it refuses anything encoding/json
// would refuse, reads only the fields the gates need (the model alias, stream, the requested output,
// tools, the endpoint's prompt field), skips everything else unmaterialized, and keeps the caller's
// bytes so that Request.Body can splice the served model name into them and relay every other byte
// unchanged. Keys are exact: a field the router reads must appear once and be spelled exactly; a key
// that differs from one only by case is refused (KeyError), because a case-folding upstream would
// read it as that field. FormRequest describes a multipart audio request from the two form fields
// the router reads; its prompt is audio and not measured.
//
// The prompt is measured conservatively (EstimateTokens: never below a four-bytes-per-token
// tokenizer's count), walking messages, content parts and Responses items; media parts and media
// keys mark the request as media. The gates then apply in a fixed order: the endpoint gate (a
// replica tier serves only chat, completions and Responses), output, context, tools, media. Every
// refusal is a fixed message the caller sees with status 400; nothing is reserved before the gates
// pass.
//
// Reading guide:
//
//   - endpoint.go: Endpoint, the surfaces and what each may reach.
//   - request.go: Request, Parse, FormRequest, Body; the top-level fields and their keys; fold.go: the
//     key matching under case folding, as encoding/json decides it.
//   - measure.go: the prompt walkers (text, token IDs, messages, content parts, Responses items).
//   - gates.go: Limits and Check, the gate refusals.
package request
