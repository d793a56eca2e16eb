package request

import "errors"

// Limits are a tier's request-wide capability gates.
type Limits struct {
	Replica          bool  // a replica tier: only ReplicaEligible endpoints pass (the endpoint gate)
	MaxContextTokens int64 // 0 = no context gate
	MaxOutputTokens  int64 // 0 = no output gate
	ToolsAllowed     bool
	MediaAllowed     bool
}

// Gate refusals. Their text is the fixed message the caller sees with status 400.
var (
	ErrContextExceeded = errors.New("estimated prompt tokens plus requested output tokens exceed the model's context window")
	ErrOutputExceeded  = errors.New("requested output tokens exceed the model's maximum output")
	ErrToolsRefused    = errors.New("this model does not accept tools")
	ErrMediaRefused    = errors.New("this model does not accept image, audio, video or file content")
	ErrEndpointRefused = errors.New("this model does not serve this endpoint")
)

// Check applies every gate to the request, the endpoint gate first; it runs before admission, so a
// refusal reserves nothing.
func (l Limits) Check(r Request) error {
	switch {
	case l.Replica && !r.Endpoint.ReplicaEligible():
		return ErrEndpointRefused
	case l.MaxOutputTokens > 0 && r.MaxOutput > l.MaxOutputTokens:
		return ErrOutputExceeded
	case l.MaxContextTokens > 0 && r.PromptTokens+r.MaxOutput > l.MaxContextTokens:
		return ErrContextExceeded
	case r.Tools && !l.ToolsAllowed:
		return ErrToolsRefused
	case r.Media && !l.MediaAllowed:
		return ErrMediaRefused
	}
	return nil
}
