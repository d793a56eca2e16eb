package fakevllm

import (
	"encoding/binary"
	"math"

	"github.com/anvil-llm/anvil/internal/wav"
)

// The fake voice: 16-bit signed little-endian mono PCM at 24 kHz (what
// OpenAI's "pcm" format is, and what vLLM-Omni's Qwen3-TTS and Voxtral TTS
// produce), 1920 samples (80 ms) per engine output token.
const (
	speechSampleRate      = 24000
	speechBytesPerSample  = 2
	samplesPerSpeechToken = 1920
	speechTokenBytes      = samplesPerSpeechToken * speechBytesPerSample
	wavHeaderBytes        = wav.HeaderBytes
)

// speechWAVHeader is the canonical WAV header of a file holding dataBytes bytes of the fake voice.
func speechWAVHeader(dataBytes uint32) [wavHeaderBytes]byte {
	return wav.Header(wav.Format{SampleRate: speechSampleRate, Channels: 1, BitsPerSample: 8 * speechBytesPerSample}, dataBytes)
}

// speechSample is sample n of the fake voice: a tone at a third of full
// scale that steps through eight pitches from 220 Hz, one per token, so the
// audio is deterministic, audible and differs token to token.
func speechSample(n int64) int16 {
	token := n / samplesPerSpeechToken
	freq := 220 * (1 + float64(token%8)/8)
	return int16(math.Round(0.3 * math.MaxInt16 * math.Sin(2*math.Pi*freq*float64(n)/speechSampleRate)))
}

// appendSpeechToken appends the samples of output token i.
func appendSpeechToken(dst []byte, i int) []byte {
	start := int64(i) * samplesPerSpeechToken
	for n := start; n < start+samplesPerSpeechToken; n++ {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(speechSample(n)))
	}
	return dst
}
