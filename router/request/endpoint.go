package request

// Endpoint names the OpenAI surface a request arrived on; it decides which body fields carry the prompt
// and the requested output, and whether replica tiers may serve it at all.
type Endpoint uint8

const (
	ChatCompletions Endpoint = iota
	Completions
	Responses
	Embeddings
	AudioTranscriptions // multipart/form-data in, text (JSON or SSE) out
	AudioTranslations   // multipart/form-data in, text (JSON or SSE) out
	AudioSpeech         // JSON in, audio bytes out
)

var endpointPaths = [...]string{"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings",
	"/v1/audio/transcriptions", "/v1/audio/translations", "/v1/audio/speech"}

// Path is the upstream path of the endpoint.
func (e Endpoint) Path() string { return endpointPaths[e] }

// ReplicaEligible reports whether replica tiers may serve the endpoint. Embeddings and the audio routes
// (purpose routes) resolve only to direct tiers; replica scheduling never applies to them.
func (e Endpoint) ReplicaEligible() bool {
	return e == ChatCompletions || e == Completions || e == Responses
}

// Audio reports whether the endpoint is one of the audio routes. Audio is media: a tier serves them
// only when its media gate allows media.
func (e Endpoint) Audio() bool {
	return e == AudioTranscriptions || e == AudioTranslations || e == AudioSpeech
}

// Multipart reports whether the endpoint's body is a multipart/form-data form (FormRequest) instead of
// a JSON object (Parse).
func (e Endpoint) Multipart() bool { return e == AudioTranscriptions || e == AudioTranslations }
