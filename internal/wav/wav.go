// Package wav writes the canonical 44-byte RIFF/WAVE header of a linear PCM file: one "fmt " chunk
// of 16 bytes, then the "data" chunk. It is pure: standard library only, no I/O.
package wav

import "encoding/binary"

// HeaderBytes is the length of the canonical header.
const HeaderBytes = 44

// Format is a linear PCM sample format.
type Format struct {
	SampleRate    uint32 // samples per second per channel
	Channels      uint16
	BitsPerSample uint16 // a multiple of 8
}

// blockAlign is the bytes of one sample frame (one sample of every channel).
func (f Format) blockAlign() uint16 { return f.Channels * f.BitsPerSample / 8 }

// Header is the canonical header of a PCM file in format f holding dataBytes bytes of samples. The
// RIFF size is 36 + dataBytes, as the format defines it (the file's length less 8).
func Header(f Format, dataBytes uint32) [HeaderBytes]byte {
	var h [HeaderBytes]byte
	le := binary.LittleEndian
	copy(h[0:], "RIFF")
	le.PutUint32(h[4:], 36+dataBytes)
	copy(h[8:], "WAVE")
	copy(h[12:], "fmt ")
	le.PutUint32(h[16:], 16) // fmt chunk size
	le.PutUint16(h[20:], 1)  // PCM
	le.PutUint16(h[22:], f.Channels)
	le.PutUint32(h[24:], f.SampleRate)
	le.PutUint32(h[28:], f.SampleRate*uint32(f.blockAlign())) // byte rate
	le.PutUint16(h[32:], f.blockAlign())
	le.PutUint16(h[34:], f.BitsPerSample)
	copy(h[36:], "data")
	le.PutUint32(h[40:], dataBytes)
	return h
}
