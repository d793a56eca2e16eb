package scenarios

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestArithmeticIsBitExact pins the exact bits of this package's own floating-point arithmetic
// (the normal and lognormal transforms, the gamma cube and acceptance test) over fixed inputs.
// Every product meeting an addition there is rounded explicitly, so no compiler may fuse it into
// an FMA and the bits are the same on every architecture. Without those conversions the test
// fails wherever the compiler fuses: GOAMD64=v3 on this machine, arm64, ppc64le, s390x. The
// inputs come from PCG's Float64 and exact scalings, which involve no fusable arithmetic; the
// standard library's normal variates are left out, since Go promises nothing about their bits
// across architectures.
func TestArithmeticIsBitExact(t *testing.T) {
	h := fnv.New64a()
	put := func(v float64) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		h.Write(b[:])
	}
	r := rand.New(rand.NewPCG(7, 11))
	logn := Dist{Dist: DistLognormal, Median: 512, Sigma: 0.8}
	norm := Dist{Dist: DistNormal, Mean: 500, StdDev: 123.4}
	const d, c = 4.2 - 1.0/3, 0.1695
	accepted := 0
	for range 20000 {
		z := float64(8*r.Float64()) - 4 // exact: a power-of-two scaling, then one rounding
		put(logn.logExponent(z))
		put(norm.normal(z))
		v := gammaCube(c, z)
		put(v)
		if v > 0 && gammaAccept(d, z, v, r.Float64()) {
			accepted++
		}
	}
	assert.Equal(t, uint64(0x91bcdd1d5688d4b2), h.Sum64())
	assert.Equal(t, 17598, accepted)
}
