package fakevllm

import (
	"encoding/binary"
	"math"
)

// The fake voice: 16-bit signed little-endian mono PCM at 24 kHz (what
// OpenAI's "pcm" format is, and what vLLM-Omni's Qwen3-TTS and Voxtral TTS
// produce), 1920 samples (80 ms) per engine output token.
const (
	speechSampleRate      = 24000
	speechBytesPerSample  = 2
	samplesPerSpeechToken = 1920
	speechTokenBytes      = samplesPerSpeechToken * speechBytesPerSample
	wavHeaderBytes        = 44
)

// wavHeader is the canonical 44-byte RIFF/WAVE header of a PCM file holding
// dataBytes bytes of the fake voice.
func wavHeader(dataBytes uint32) [wavHeaderBytes]byte {
	var h [wavHeaderBytes]byte
	le := binary.LittleEndian
	copy(h[0:], "RIFF")
	le.PutUint32(h[4:], 36+dataBytes)
	copy(h[8:], "WAVE")
	copy(h[12:], "fmt ")
	le.PutUint32(h[16:], 16)                                    // fmt chunk size
	le.PutUint16(h[20:], 1)                                     // PCM
	le.PutUint16(h[22:], 1)                                     // mono
	le.PutUint32(h[24:], speechSampleRate)                      // sample rate
	le.PutUint32(h[28:], speechSampleRate*speechBytesPerSample) // byte rate
	le.PutUint16(h[32:], speechBytesPerSample)                  // block align
	le.PutUint16(h[34:], 8*speechBytesPerSample)                // bits per sample
	copy(h[36:], "data")
	le.PutUint32(h[40:], dataBytes)
	return h
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
