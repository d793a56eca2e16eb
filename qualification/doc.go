// Package qualification is the gated real-hardware qualification of a replica tier (spec T013):
// a reproducible procedure that an operator plans, approves and runs against their own router and
// GPUs, recording every phase, and that ends in a verdict and a promotion request for a human to
// sign. It never promotes anything, and it never starts by accident.
//
// It is a black-box client, like package bench: it speaks to the router only over HTTP (the
// read-only admin views, GET /metrics, and transitions through router/manage, the request function
// the CLI verbs and the MCP tool use), and to the members only as an OpenAI client and a metrics
// scraper. It imports none of the router's internals, the simulator or the fake vLLM (deps_test.go
// enforces it), so the same run means the same thing against real vLLM members and fake ones.
//
// Synthetic and real evidence stay apart by observation, not declaration: a fake vLLM member
// marks every answer with FakeHeader, and a run that saw it is labelled synthetic in every report
// and can never be promotable.
//
// Reading guide:
//
//   - file.go: the qualification file's closed schema (QUAL.yaml) and its strict decoding.
//   - plan.go: Parse and the validated Plan with defaults, and its Fingerprint; validate.go: the
//     checks of each section Parse applies; loads.go: the bench plans of the load phases.
//   - approval.go: the approval scheme (an HMAC of the plan's fingerprint under the operator's
//     token, compared in constant time) and Plan.Approve, without which Run does not start.
//   - describe.go: the procedure in words (what `anvil-qualify plan` prints).
//   - secrets.go: token sources (environment variables, files), resolved at run time only.
//   - run.go: Run, the phase sequence, events, and the artifact helpers.
//   - preflight.go, load.go, failure.go, restore.go: the phases; load.go also holds the router
//     accounting every routed phase checks (one decision per request, one attempt per admitted
//     request, every lease released once, none left held).
//   - gate.go: the verdict, the SLO checks and the promotion request.
//   - observe.go, routerview.go: what the run reads from members and router, and the readers of
//     those answers (bounded, never echoing a URL or a token).
//   - report.go: phase reports (JSON and Markdown). artifacts.go: the run directory, atomic writes,
//     the manifest and Verify.
package qualification
