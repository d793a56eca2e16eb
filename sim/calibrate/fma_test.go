package calibrate

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/scenarios"
)

// TestCycleIsBitExact pins the bits of the default window's arithmetic over drawn profiles and
// lognormal workloads (whose expected lengths are inexact, so a fused multiply-add would round
// differently). Without the explicit float64 roundings in cycle it fails wherever the compiler
// fuses: GOAMD64=v3 on this machine, arm64, ppc64le, s390x.
func TestCycleIsBitExact(t *testing.T) {
	h := fnv.New64a()
	r := rand.New(rand.NewPCG(3, 5))
	p := engine.DefaultProfile()
	for range 5000 {
		p.StepBase = time.Duration(r.IntN(int(10 * time.Millisecond)))
		p.DecodePerSeq = time.Duration(r.IntN(int(100 * time.Microsecond)))
		p.ContextPerToken = time.Duration(r.IntN(100))
		p.PrefillPerToken = time.Duration(r.IntN(int(time.Millisecond)))
		w := scenarios.Workload{
			PromptTokens: scenarios.Dist{Dist: scenarios.DistLognormal, Median: float64(1 + r.IntN(4096)), Sigma: float64(r.IntN(100)) / 64},
			OutputTokens: scenarios.Dist{Dist: scenarios.DistLognormal, Median: float64(1 + r.IntN(1024)), Sigma: float64(r.IntN(100)) / 64},
		}
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(cycle(p, w, 1+r.IntN(512))))
		h.Write(b[:])
	}
	assert.Equal(t, uint64(0x4a629301e8450fa1), h.Sum64())
}
