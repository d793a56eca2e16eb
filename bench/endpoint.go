package bench

import "fmt"

// Endpoint is the OpenAI surface a run drives.
type Endpoint uint8

// The endpoints.
const (
	Chat        Endpoint = iota + 1 // POST /v1/chat/completions
	Completions                     // POST /v1/completions
	Responses                       // POST /v1/responses
)

// String is the endpoint's flag and report name.
func (e Endpoint) String() string {
	switch e {
	case Chat:
		return "chat"
	case Completions:
		return "completions"
	case Responses:
		return "responses"
	}
	return "invalid"
}

// Path is the endpoint's URL path below the base URL.
func (e Endpoint) Path() string {
	switch e {
	case Chat:
		return "/v1/chat/completions"
	case Completions:
		return "/v1/completions"
	case Responses:
		return "/v1/responses"
	}
	return ""
}

// ParseEndpoint reads an endpoint name: chat, completions or responses.
func ParseEndpoint(s string) (Endpoint, error) {
	for _, e := range []Endpoint{Chat, Completions, Responses} {
		if e.String() == s {
			return e, nil
		}
	}
	return 0, fmt.Errorf("%w: endpoint must be chat, completions or responses", ErrInvalid)
}
