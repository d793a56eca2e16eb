package wav

import (
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The header is byte-exact for the two formats the tree writes: the fake voice (24 kHz mono 16-bit)
// and the demo's uploaded clip (16 kHz mono 16-bit).
func TestHeader(t *testing.T) {
	for _, tc := range []struct {
		name      string
		f         Format
		dataBytes uint32
		want      string
	}{
		{"fake voice", Format{SampleRate: 24000, Channels: 1, BitsPerSample: 16}, 3840,
			"52494646" + "240f0000" + "57415645" + "666d7420" + "10000000" + "0100" + "0100" + "c05d0000" + "80bb0000" + "0200" + "1000" + "64617461" + "000f0000"},
		{"demo clip", Format{SampleRate: 16000, Channels: 1, BitsPerSample: 16}, 32000,
			"52494646" + "247d0000" + "57415645" + "666d7420" + "10000000" + "0100" + "0100" + "803e0000" + "007d0000" + "0200" + "1000" + "64617461" + "007d0000"},
		{"stereo 8-bit", Format{SampleRate: 8000, Channels: 2, BitsPerSample: 8}, 0,
			"52494646" + "24000000" + "57415645" + "666d7420" + "10000000" + "0100" + "0200" + "401f0000" + "803e0000" + "0200" + "0800" + "64617461" + "00000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Header(tc.f, tc.dataBytes)
			assert.Equal(t, tc.want, hex.EncodeToString(h[:]))
			assert.Equal(t, 36+tc.dataBytes, binary.LittleEndian.Uint32(h[4:]))
		})
	}
}
