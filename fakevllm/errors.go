package fakevllm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// apiError is an OpenAI-style error as vLLM returns it: an HTTP status plus the
// body {"error":{"message","type","param","code"}}, where code repeats the
// status and type is vLLM's error class name for that status.
type apiError struct {
	Status  int
	Message string
	Param   string // "" is serialized as null
}

func (e *apiError) Error() string { return e.Message }

// badRequest builds a 400 for a request field (param may be "").
func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...), Param: param}
}

// errorType maps a status to the error class name vLLM puts in "type".
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequestError"
	case http.StatusUnauthorized:
		return "AuthenticationError"
	case http.StatusForbidden:
		return "PermissionDeniedError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusRequestEntityTooLarge:
		return "RequestEntityTooLargeError"
	case http.StatusUnprocessableEntity:
		return "UnprocessableEntityError"
	case http.StatusTooManyRequests:
		return "RateLimitError"
	case http.StatusNotImplemented:
		return "NotImplementedError"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableError"
	}
	if status >= 500 {
		return "InternalServerError"
	}
	return "BadRequestError"
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// body renders the error's JSON body.
func (e *apiError) body() []byte {
	d := errorDetail{Message: e.Message, Type: errorType(e.Status), Code: e.Status}
	if e.Param != "" {
		p := e.Param
		d.Param = &p
	}
	b, err := json.Marshal(errorBody{Error: d})
	if err != nil { // unreachable: every field is a plain string or int
		return []byte(`{"error":{"message":"internal error","type":"InternalServerError","param":null,"code":500}}`)
	}
	return b
}

// writeError writes e as the whole response. It must run before anything else
// has been written.
func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_, _ = w.Write(e.body())
}

// asAPIError converts any error into an apiError, keeping one that already is.
func asAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return &apiError{Status: http.StatusInternalServerError, Message: "internal server error"}
}
