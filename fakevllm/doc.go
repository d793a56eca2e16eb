// Package fakevllm is a vLLM-compatible HTTP server that drives the pure
// engine model (package engine) in real time, so the router can be tested, demonstrated
// and benchmarked without a GPU.
//
// Routes: POST /v1/chat/completions, /v1/completions, /v1/responses,
// /v1/audio/transcriptions, /v1/audio/translations and /v1/audio/speech;
// GET /v1/models, /health, /version, /metrics; GET, PUT and POST
// /admin/faults. Every POST route is an engine request: it passes the same
// gates and faults (slow start, engine death, forced and random HTTP errors,
// step slowdown, stream truncation, a malformed frame, a stream ended by
// vLLM's error frame and [DONE]) and shows on /metrics like any vLLM request.
//
// Every answer, on every route, carries the header X-Anvil-Fakevllm
// (IdentityHeader), which a real vLLM never sends: anvil-qualify labels a run
// synthetic by observing it, so fake evidence cannot pass for real.
//
// Reading guide:
//
//   - server.go: Options, Server, NewServer, the routes, /health.
//   - models.go: the model names a member answers to and GET /v1/models.
//   - driver.go: the real-time shell around the engine. One goroutine owns the
//     engine; handlers talk to it over channels; a timer advances it at
//     NextEventAt; events land in per-request tickets.
//   - generate.go: the gates, submission, the streaming and ordinary loops,
//     client-disconnect aborts; every text and speech-to-text route runs
//     through it.
//   - request.go, prompt.go, tokens.go: decoding and validating the three OpenAI request
//     shapes into one generation request (engine untouched on bad input), the
//     prompt-token estimate, the natural stop length and the filler text.
//   - chat.go (chat and completions), responses.go, sse.go: vLLM's ordinary
//     and SSE response framing.
//   - audio.go, audio_form.go: transcriptions and translations: the streaming,
//     bounded multipart parser and vLLM's speech-to-text answers.
//   - speech.go, wav.go: text to speech, written as the engine produces it
//     (the WAV header from internal/wav).
//   - metrics.go: vLLM's /metrics families on a private Prometheus registry.
//   - faults.go, faultstate.go, admin.go: seeded fault injection, settable by
//     Options, a YAML/JSON file and /admin/faults.
//   - cluster.go: several members in one process on loopback listeners.
//
// # Model names
//
// Which option lists what in /v1/models (vLLM's shape: every field present,
// base entries first, then adapters):
//
//   - Options.Models (--model): served names of the one base model, like
//     vLLM's --served-model-name. Each is a base entry (parent null,
//     max_model_len set) with the same root, the first name. Responses report
//     the first name whichever one was asked for, as vLLM does.
//   - Options.LoRA (--lora): LoRA adapters, like vLLM's --lora-modules.
//     Each entry has parent = the first served name, root = LoRARoot+name and
//     max_model_len null. Requests may name an adapter; responses then report
//     the adapter's name.
//   - Options.ExtraModels (--extra-model): unrelated base models (root =
//     their own name, parent null), for a member that lists a model other
//     than the one it is meant to serve. Requests naming one are served by
//     the same engine and report its name.
//
// # Speech to text
//
// POST /v1/audio/transcriptions and /v1/audio/translations take
// multipart/form-data as vLLM does: a file part (with a filename), an
// optional model (absent means the first served name), prompt,
// response_format, stream, stream_include_usage, stream_continuous_usage_stats,
// max_completion_tokens, temperature, language; other fields are read and
// ignored, as vLLM ignores unknown fields. The body is parsed in one streaming
// pass: field values are bounded (64 KiB), the file is counted through a
// fixed buffer and never held, and it is refused with vLLM's 400 (param
// audio_filesize_mb) at the first byte past Options.MaxAudioBytes (default
// 25 MiB, vLLM's VLLM_MAX_AUDIO_CLIP_FILESIZE_MB). The whole body may be
// MaxAudioBytes + MaxBodyBytes long (413 past it). A known field given twice
// is refused (400): the fake is stricter than FastAPI there, so a proxy and
// the server can never read different values.
//
// No audio is decoded: the upload is taken as 16 kHz 16-bit mono PCM, so its
// size fixes its duration (usage seconds, rounded up), its prompt (4 +
// prompt-field tokens + one audio token per 2560 bytes) and its transcript:
// "transcribed N bytes of NAME" ("translated" for a translation), then the
// filler words, 5 + ceil(N/12800) words in all, one engine token each,
// then EOS. An empty file is refused as vLLM refuses undecodable audio. The
// ordinary answer is {"text","usage":{"type":"duration","seconds"}}
// ({"text"} for a translation); response_format text gets the same JSON, as
// vLLM answers it; srt and vtt are refused as vLLM refuses them, and
// verbose_json as vLLM refuses it for models without segment timestamps. A
// stream is vLLM's: transcription.chunk (translation.chunk) objects with
// choices[0].delta.content, one per batch of new words, no role chunk, the
// finish on the EOS chunk, the usage chunk when stream_include_usage is set,
// then data: [DONE].
//
// # Text to speech
//
// vLLM itself has no /v1/audio/speech; vLLM-Omni (vllm serve MODEL --omni)
// serves it for TTS models such as Qwen3-TTS, Voxtral TTS and Fish Speech.
// The fake serves it so that a router's direct audio tier can be tested: the
// JSON body {model, input, voice, instructions, response_format, speed,
// stream_format} is decoded strictly (wrong types are 400; unknown fields are
// ignored as vLLM ignores them), input is 1-4096 characters, speed 0.25-4,
// response_format wav (default) or pcm; mp3, opus, aac and flac are refused.
// The answer is 24 kHz 16-bit mono PCM (in a RIFF/WAVE file for wav), 1/15 s
// of speech per input character at speed 1, produced by the engine as one
// 80 ms audio token at a time and written as it comes (Content-Length is
// known up front; the last token's audio comes with the finish). Truncation
// faults cut it after their chunk-th token; malformed-chunk faults apply to
// SSE streams only.
//
// Prompt tokens are estimated, not tokenized: see EstimateTextTokens.
package fakevllm
