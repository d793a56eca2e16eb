package fakevllm

import (
	"math"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/engine"
)

// Text to speech. vLLM itself serves no /v1/audio/speech; vLLM-Omni (`vllm
// serve MODEL --omni`, for Qwen3-TTS, Voxtral TTS and others) does, with
// OpenAI's request body. The fake serves it so that a router's direct audio
// tier can be tested against real parts.
//
// A speech request is one engine request: its prompt is speechPrimerTokens
// plus the estimated tokens of input and instructions; its output is one
// audio-codec token per 80 ms of speech (12.5 per second, Qwen3-TTS-12Hz's
// rate), then EOS. The speech lasts 1/15 s per input character at speed 1
// (about 180 words a minute), so an input of n characters at speed v yields
// ceil(n*2500 / (3*round(1000*v))) tokens, that is ceil(5n/6) at speed 1.
const (
	speechPrimerTokens = 4
	maxSpeechInputRune = 4096 // OpenAI's bound of input
	minSpeechSpeed     = 0.25
	maxSpeechSpeed     = 4.0
)

type speechBody struct {
	Model          *string  `json:"model"`
	Input          *string  `json:"input"`
	Voice          *string  `json:"voice"`
	Instructions   *string  `json:"instructions"`
	ResponseFormat *string  `json:"response_format"`
	Speed          *float64 `json:"speed"`
	StreamFormat   *string  `json:"stream_format"`
}

// speechRequest is a validated speech request.
type speechRequest struct {
	g      genRequest
	tokens int  // audio tokens, EOS excluded
	wav    bool // a WAV file; otherwise raw PCM
}

// speech handles POST /v1/audio/speech: the audio is written as the engine
// produces it, one flush per batch of tokens, so a proxy can relay it
// progressively. Content-Length is known up front, so a cut is visible.
func (s *Server) speech(c *gin.Context) {
	if e := s.gate(c); e != nil {
		writeError(c.Writer, e)
		return
	}
	body, e := s.readBody(c)
	if e != nil {
		writeError(c.Writer, e)
		return
	}
	req, err := decodeSpeech(body, s.lim)
	if err != nil {
		writeError(c.Writer, asAPIError(err))
		return
	}
	if e := s.checkModel(req.g.model); e != nil {
		writeError(c.Writer, e)
		return
	}
	t, err := s.drv.submit(req.g, true)
	if err != nil {
		writeError(c.Writer, submitError(err))
		return
	}
	s.speak(c, req, t)
}

// decodeSpeech parses and validates a speech body. Errors are *apiError with
// status 400; nothing here touches the engine.
func decodeSpeech(body []byte, lim limits) (speechRequest, error) {
	if err := checkObject(body); err != nil {
		return speechRequest{}, err
	}
	var b speechBody
	if err := unmarshalStrict(body, &b); err != nil {
		return speechRequest{}, err
	}
	req := speechRequest{wav: true, g: genRequest{endpoint: endpointSpeech, stream: true}}
	if b.Model != nil {
		req.g.model = *b.Model
	}
	if b.Input == nil {
		return req, badRequest("input", "field required: input")
	}
	runes := utf8.RuneCountInString(*b.Input)
	switch {
	case runes == 0:
		return req, badRequest("input", "input must not be empty")
	case runes > maxSpeechInputRune:
		return req, badRequest("input", "input is longer than %d characters", maxSpeechInputRune)
	}
	if f := b.ResponseFormat; f != nil {
		switch *f {
		case "wav":
		case "pcm":
			req.wav = false
		case "mp3", "opus", "aac", "flac":
			return req, badRequest("response_format", "response_format %s is not supported by this server; use wav or pcm", *f)
		default:
			return req, badRequest("response_format", "response_format must be one of mp3, opus, aac, flac, wav, pcm; got %q", truncateString(*f, 40))
		}
	}
	speed := 1.0
	if b.Speed != nil {
		speed = *b.Speed
		if !(speed >= minSpeechSpeed && speed <= maxSpeechSpeed) {
			return req, badRequest("speed", "speed must be between 0.25 and 4.0, got %s", strconv.FormatFloat(speed, 'g', -1, 64))
		}
	}
	if f := b.StreamFormat; f != nil && *f != "audio" {
		return req, badRequest("stream_format", "stream_format must be audio; sse is not supported by this server")
	}
	req.g.promptTokens = speechPrimerTokens + EstimateTextTokens(*b.Input)
	if b.Instructions != nil {
		req.g.promptTokens += EstimateTextTokens(*b.Instructions)
	}
	milli := int64(math.Round(speed * 1000))
	req.tokens = int(ceilDiv(int64(runes)*2500, 3*milli))
	room := lim.maxModelLen - req.g.promptTokens
	if req.tokens+1 > room {
		return req, badRequest("input", "This model's maximum context length is %d tokens. However, this input takes %d tokens and its speech %d more. Please shorten the input.",
			lim.maxModelLen, req.g.promptTokens, req.tokens+1)
	}
	req.g.maxTokens, req.g.stopAfter = room, req.tokens+1
	return req, nil
}

// speak writes the audio as the ticket's tokens arrive. A client that goes
// away aborts the request in the engine; a dead engine, an aborted request
// or a truncation fault cuts the connection.
func (s *Server) speak(c *gin.Context, req speechRequest, t *ticket) {
	completed := false
	defer func() {
		if !completed {
			s.drv.abort(t)
		}
	}()
	dataBytes := req.tokens * speechTokenBytes
	h := c.Writer.Header()
	h.Set("Content-Type", "audio/pcm")
	length := dataBytes
	if req.wav {
		h.Set("Content-Type", "audio/wav")
		length += wavHeaderBytes
	}
	h.Set("Content-Length", strconv.Itoa(length))
	c.Writer.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(c.Writer)
	if req.wav {
		hdr := speechWAVHeader(uint32(dataBytes))
		if _, err := c.Writer.Write(hdr[:]); err != nil {
			return
		}
	}
	if rc.Flush() != nil {
		return
	}
	truncateAt := s.faults.drawStreamPlan().truncateAt
	ctx := c.Request.Context()
	buf := make([]byte, 0, speechTokenBytes)
	sent := 0
	for {
		p := t.load()
		if p.failed || (p.finished && p.reason == engine.FinishAbort) {
			cutConnection()
		}
		// The last token's audio waits for the finish (EOS, one step later),
		// so that the body is complete only when the request is: a client
		// that leaves on Content-Length then finds the request finished.
		vis := visibleTokens(p)
		if !p.finished {
			vis = min(vis, req.tokens-1)
		}
		for ; sent < vis; sent++ {
			buf = appendSpeechToken(buf[:0], sent)
			if _, err := c.Writer.Write(buf); err != nil {
				return
			}
			if sent+1 == truncateAt {
				_ = rc.Flush()
				cutConnection()
			}
		}
		if rc.Flush() != nil {
			return
		}
		if p.finished {
			completed = true
			return
		}
		select {
		case <-t.notify:
		case <-ctx.Done():
			return
		}
	}
}
