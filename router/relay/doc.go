// Package relay makes exactly one upstream attempt for an admitted request and writes the upstream's
// answer to the caller: ordinary responses whole, SSE streams event by event, each flushed before the
// relay waits for the upstream again, and passed-through bodies (audio) read by read.
//
// The package never retries, never follows a redirect and never calls a second URL: one Do is one
// dispatch (Result.Attempts is always 1). It knows nothing about leases; the caller owns the lease and
// releases it once Do returns, whatever the outcome.
//
// # What the upstream receives
//
// The upstream request is built from scratch, so no header of the caller's request (its Authorization,
// cookies, hop-by-hop headers) can leak through. It carries only Content-Type (Upstream.ContentType,
// application/json by default), Accept (text/event-stream for streams, application/json otherwise),
// Accept-Encoding: identity, a fixed User-Agent, X-Request-ID when the ID is a valid header value, and
// Authorization: Bearer <APIKey> when an upstream key is configured. The client's context is the parent
// of the upstream request's context, so a client disconnect cancels the upstream call.
//
// The body is Upstream.Body, or Upstream.BodyStream sent as it is read (chunked; never replayed). A read
// error from a BodyStream is the caller refusing its own body mid-way (an upload over its bound, say):
// the transport stops sending, the upstream never receives a complete request, and the attempt ends
// with ErrRequestBody and the body_refused outcome without writing anything, for the caller to answer.
// Do closes a BodyStream that is an io.Closer when it returns.
//
// # What the caller must do
//
// Pass an unwritten ResponseWriter (gin's and net/http's implement http.Flusher; others still get every
// byte, unflushed) and the request's own context. Read the caller's request body to the end before Do,
// or stream it through as the BodyStream: net/http only notices a client disconnect, and cancels the
// request context, once the body is consumed (or its read fails). A server WriteTimeout also bounds
// streams; Options.Timeout is the relay's own bound. When Result.Cut is set, abort the connection.
//
// # First byte
//
// The first byte is the first byte of the upstream response body (or the end of an empty body), not the
// status line: vLLM sends SSE headers before it has a token. Nothing is written to the client before that
// byte arrives, so every failure up to it gets a clean HTTP error. The first-byte timeout runs from the
// moment the request body has been sent: the start of Do for a byte body, the end of a BodyStream (an
// upload may take longer than the answer); Options.Timeout runs from the start of Do either way.
//
// # Usage
//
// Result.Usage is the token counts the upstream itself reported in a 2xx answer: an ordinary body's
// usage, a stream event's (the include_usage chunk, which the relay never asks for on the caller's
// behalf) or a Responses stream's response.completed. It is read from what is already in memory, with
// internal/jsonscan, never estimated; see usage.go.
//
// # What the client gets
//
// Every attempt ends in one decisionlog.Ending; decisionlog.Terminal turns it into Result.Outcome and
// the status the client saw. The simulator classifies its virtual attempts with the same function, so
// the table below is the simulator's too.
//
// Errors generated here use OpenAI's shape {"error":{"message","type","param","code"}} with a fixed
// message, type "upstream_error" and the outcome as code. They never contain the upstream URL, address or
// any Go error text; Result.Err likewise only ever holds one of this package's sentinel errors.
//
//	before anything is written:
//	  transport error                       502 upstream_transport_error
//	  first-byte or overall timeout         504 upstream_timeout
//	  ordinary body over MaxResponseBytes   502 upstream_transport_error (Err = ErrResponseTooLarge)
//	  SSE malformed before the first event  502 malformed_stream
//	  SSE ended before the first event      502 stream_truncated
//	  client canceled                       nothing (Result.Status = 499)
//	  BodyStream read failed                nothing (Result.Err = ErrRequestBody, outcome body_refused)
//	ordinary response (any status)          upstream status, Content-Type, Retry-After on errors, the body
//	                                        unchanged; non-2xx is outcome upstream_http_error, except:
//	  401 or 403 from a keyed upstream      502 with a fixed error (Err = ErrUpstreamCredentials)
//	  error carrying the upstream key       upstream status and clean Retry-After, fixed error body
//	  2xx carrying the whole upstream key   502 with a fixed error (Err = ErrUpstreamKeyEcho)
//	passed-through body (2xx, PassThrough,  status, Content-Type and Content-Length (when given) at once,
//	not an event stream)                    then every read as it arrives, flushed: success at its end
//	  announced over MaxResponseBytes       502 upstream_transport_error before anything is written
//	  cut short, reset, or past the bound   stream_truncated (upstream_transport_error past the bound) and
//	                                        Result.Cut: the caller aborts the connection
//	  a read carrying the whole upstream    cut before a byte of the key is written: upstream_http_error
//	  key                                   (Err = ErrUpstreamKeyEcho) and Result.Cut
//	  overall timeout mid-body              upstream_timeout and Result.Cut
//	SSE (2xx, text/event-stream)            headers with the first well-formed block, then every block as it
//	                                        arrives, flushed, with LF line endings (blocks that arrived
//	                                        together are written together and flushed once)
//	  data: [DONE]                          relayed and flushed, then the relay stops: success; it waits
//	                                        up to 50 ms for the upstream response to end (never relaying
//	                                        anything after [DONE]), so the connection is kept for the
//	                                        next request
//	  data: [DONE] after an error event     not relayed (vLLM sends one after its error event): the stream
//	                                        ends with the error event; the outcome is the error's
//	  Responses terminal event              response.completed/incomplete/failed, then upstream EOF: success
//	  audio terminal event                  transcript.text.done or speech.audio.done (OpenAI's audio
//	                                        streams), then upstream EOF: success
//	  upstream error event                  relayed unchanged; outcome upstream_http_error (first error wins);
//	                                        one carrying the upstream key is replaced by a fixed error event
//	  any other event carrying the whole    not relayed: the stream ends with data: {"error":{...,"code":
//	  upstream key                          "upstream_http_error"}} (a clean 502 if it was the first),
//	                                        then EOF; Err = ErrUpstreamKeyEcho wins over an earlier error
//	  malformed or oversized event          the bad event is dropped; the client gets one
//	                                        data: {"error":{...,"code":"malformed_stream"}} event, then EOF
//	  upstream closes or resets early       data: {"error":{...,"code":"stream_truncated"}}, then EOF
//	  overall timeout mid-stream            data: {"error":{...,"code":"upstream_timeout"}}, then EOF
//	  client canceled mid-stream            nothing more (the upstream request is canceled)
//
// An error event, the upstream's or the relay's, is never followed by data: [DONE]: [DONE] means a
// complete stream, so a caller that trusts it is never told an errored stream succeeded.
//
// # Upstream keys never reach the caller
//
// With Upstream.APIKey set, the bytes of every error the upstream sends (an ordinary non-2xx body, its
// Retry-After and Content-Type, an SSE error event) are checked for the key before they are relayed, in
// the forms listed on leakCheck: the key itself or JSON-escaped, any 8 consecutive characters of it, 4-7
// of its first characters before a mask, or a mask before its last 3 or 4 characters (a mask is three or
// more of * . x X • …).
//
// Everything else relayed (a 2xx body, every other SSE event, each passed-through read, the
// Content-Type) is scanned for the whole key only, verbatim or JSON-escaped (keyScan): fragments and
// masks are ordinary model output. The scan is streaming and buffers nothing: an SSE event is checked
// whole before it is written (no form of a key holds a line feed, so none spans two events), and a
// passed-through body holds back only the trailing bytes of a read that could begin the key, at most
// the longest form less one byte, until the next read (or the end) shows they do not. An answer found
// carrying the key is replaced or cut as the table says, and no byte of that key reaches the caller. A
// key spelled across several events, or escaped character by character, is not the key's byte string
// and is not found. Without a key nothing is scanned.
//
// # SSE well-formedness
//
// Lines end in LF or CRLF (a bare CR inside a line is refused, never reinterpreted). Each non-blank line
// is a comment (":...") or one of the fields data, event, id, retry; any other field name is malformed.
// An event's joined data must be exactly "[DONE]" (a single data line) or valid JSON. A block without data
// lines (a keep-alive comment, say) is relayed as is. An event, including its lines and terminator, may
// not exceed MaxEventBytes; memory per stream is bounded by that and the read buffer.
package relay
