package fakevllm

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
)

// The speech-to-text model. The fake decodes no audio: an upload is taken as
// 16 kHz 16-bit mono PCM whatever its bytes, so its size alone fixes its
// duration, its prompt tokens and the length of its transcript.
//
// Each upload is one engine request, like a text request: vLLM runs speech to
// text through the same engine client, scheduler and metrics (a Whisper clip
// longer than 30 s becomes one engine request per 30 s chunk there; here it
// stays one request). Its prompt is audioPrimerTokens (Whisper's
// <|startoftranscript|><|lang|><|task|><|notimestamps|>), the estimated
// tokens of the prompt field, and one audio token per audioBytesPerToken
// (12.5 per second, the audio-token rate of Voxtral-style speech LLMs). Its
// output is the transcript, one token per word, then EOS.
const (
	audioBytesPerSecond = 32000
	audioBytesPerToken  = 2560
	audioBytesPerWord   = 12800 // 2.5 spoken words per second
	audioPrimerTokens   = 4
	transcriptHeadWords = 5 // "transcribed", the size, "bytes", "of", the name
)

// transcribe handles POST /v1/audio/transcriptions and /v1/audio/translations
// (ep says which). Every check that can refuse the request runs before the
// engine sees it.
func (s *Server) transcribe(ep endpoint) gin.HandlerFunc {
	return func(c *gin.Context) {
		if e := s.gate(c); e != nil {
			writeError(c.Writer, e)
			return
		}
		body := http.MaxBytesReader(c.Writer, c.Request.Body, s.opts.MaxAudioBytes+s.opts.MaxBodyBytes)
		f, err := parseAudioForm(body, c.GetHeader("Content-Type"), s.opts.MaxAudioBytes)
		if err != nil {
			writeError(c.Writer, asAPIError(err))
			return
		}
		g, e := s.audioRequest(ep, f)
		if e != nil {
			writeError(c.Writer, e)
			return
		}
		s.run(c, g, s.newTranscriptResponder(ep, g, f))
	}
}

// audioRequest validates a parsed form in vLLM's order (model, response
// format, audio, length) and models it as an engine request.
func (s *Server) audioRequest(ep endpoint, f audioForm) (genRequest, *apiError) {
	if e := s.checkModel(f.model); e != nil {
		return genRequest{}, e
	}
	switch f.responseFormat {
	case "json", "text":
		// vLLM answers "text" with the same JSON body as "json".
	case "verbose_json":
		// vLLM serves it only for models with segment timestamps (Whisper);
		// the fake models one without.
		name := f.model
		if !f.modelSet {
			name = "None"
		}
		return genRequest{}, badRequest("", "Currently do not support verbose_json for %s", truncateString(name, 256))
	default:
		return genRequest{}, badRequest("", "Currently only support response_format: `text`, `json` or `verbose_json`")
	}
	if f.fileBytes == 0 {
		return genRequest{}, badRequest("", "Invalid or unsupported audio file.")
	}
	prompt := audioPrimerTokens + int64(EstimateTextTokens(f.prompt)) + ceilDiv(f.fileBytes, audioBytesPerToken)
	if prompt >= int64(s.lim.maxModelLen) {
		return genRequest{}, badRequest("file", "This model's maximum context length is %d tokens. However, this audio and prompt take %d tokens. Please send a shorter file.",
			s.lim.maxModelLen, prompt)
	}
	g := genRequest{endpoint: ep, model: f.model, promptTokens: int(prompt), stream: f.stream,
		includeUsage: f.includeUsage, continuousUsage: f.includeUsage && f.continuousUsage}
	room := s.lim.maxModelLen - g.promptTokens
	g.maxTokens = room
	if f.maxTokens != nil {
		v := *f.maxTokens
		if v < 1 {
			return genRequest{}, badRequest("max_completion_tokens", "max_completion_tokens must be at least 1, got %d.", v)
		}
		// vLLM caps it at max_model_len instead of refusing it.
		g.maxTokens = int(min(v, int64(room)))
		g.maxTokensParam = g.maxTokens
	}
	if words := transcriptWords(f.fileBytes); words < int64(g.maxTokens) {
		g.stopAfter = int(words) + 1 // the last word, then EOS
	}
	return g, nil
}

// transcriptWords is the length of the transcript of a file of n bytes.
func transcriptWords(n int64) int64 { return transcriptHeadWords + ceilDiv(n, audioBytesPerWord) }

// audioSeconds is the duration vLLM reports in usage: whole seconds, rounded up.
func audioSeconds(n int64) int64 { return ceilDiv(n, audioBytesPerSecond) }

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// transcriptResponder renders vLLM's speech-to-text answers. The ordinary
// body is {"text","usage":{"type":"duration","seconds"}} for a transcription
// and {"text"} for a translation. A stream has no role chunk: one
// "transcription.chunk" (or "translation.chunk") per batch of new words with
// choices[0].delta.content, the last one with finish_reason and stop_reason,
// then the usage chunk when stream_include_usage is set, then [DONE].
type transcriptResponder struct {
	reply
	translation bool
	requested   *string // the model field as sent: vLLM echoes it in chunks, null when absent
	seconds     int64
	head        [transcriptHeadWords]string
}

func (s *Server) newTranscriptResponder(ep endpoint, g genRequest, f audioForm) *transcriptResponder {
	verb, task := "transcribed", "transcribe"
	if ep == endpointTranslation {
		verb, task = "translated", "translate"
	}
	r := &transcriptResponder{
		reply: reply{id: task + "-" + s.newID(), created: time.Now().Unix(), model: s.replyModel(f.model), g: g,
			noUsage: s.faults.noUsage()},
		translation: ep == endpointTranslation,
		seconds:     audioSeconds(f.fileBytes),
		head:        [transcriptHeadWords]string{verb, strconv.FormatInt(f.fileBytes, 10), "bytes", "of", f.fileName},
	}
	if f.modelSet {
		m := f.model
		r.requested = &m
	}
	return r
}

// appendText appends words [from, to) of the transcript: the head, then the
// filler vocabulary, space-separated.
func (r *transcriptResponder) appendText(dst []byte, from, to int) []byte {
	for i := from; i < to; i++ {
		if i > 0 {
			dst = append(dst, ' ')
		}
		if i < transcriptHeadWords {
			dst = append(dst, r.head[i]...)
		} else {
			dst = append(dst, fillerWords[(i-transcriptHeadWords)%len(fillerWords)]...)
		}
	}
	return dst
}

type transcriptChunk struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   *string            `json:"model"`
	Choices []transcriptChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
}

// transcriptUsageChunk is the final usage chunk, which vLLM serializes
// without its null fields (a model that was not sent is left out).
type transcriptUsageChunk struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   *string            `json:"model,omitempty"`
	Choices []transcriptChoice `json:"choices"`
	Usage   *usage             `json:"usage"`
}

type transcriptChoice struct {
	Delta        transcriptDelta `json:"delta"`
	FinishReason *string         `json:"finish_reason,omitempty"`
	StopReason   json.RawMessage `json:"stop_reason,omitempty"`
}

type transcriptDelta struct {
	Content string `json:"content"`
}

func (r *transcriptResponder) object() string {
	if r.translation {
		return "translation.chunk"
	}
	return "transcription.chunk"
}

func (r *transcriptResponder) begin(*sseWriter) error { return nil }
func (r *transcriptResponder) first(*sseWriter) error { return nil }

func (r *transcriptResponder) delta(sw *sseWriter, text string, p progress) error {
	c := transcriptChoice{Delta: transcriptDelta{Content: text}, FinishReason: finishString(p)}
	if p.finished {
		c.StopReason = jsonNull()
	}
	return sw.data(transcriptChunk{ID: r.id, Object: r.object(), Created: r.created, Model: r.requested,
		Choices: []transcriptChoice{c}, Usage: r.continuous(p.generated)})
}

func (r *transcriptResponder) end(sw *sseWriter, p progress) error {
	if r.g.includeUsage && !r.noUsage {
		u := transcriptUsageChunk{ID: r.id, Object: r.object(), Created: r.created, Model: r.requested,
			Choices: []transcriptChoice{}, Usage: r.usage(p.generated)}
		if err := sw.data(u); err != nil {
			return err
		}
	}
	return sw.done()
}

type transcription struct {
	Text  string         `json:"text"`
	Usage *durationUsage `json:"usage,omitempty"`
}

type durationUsage struct {
	Type    string `json:"type"`
	Seconds int64  `json:"seconds"`
}

func (r *transcriptResponder) body(text string, _ progress) any {
	if r.translation || r.noUsage {
		return transcription{Text: text} // vLLM reports no usage for a translation
	}
	return transcription{Text: text, Usage: &durationUsage{Type: "duration", Seconds: r.seconds}}
}
