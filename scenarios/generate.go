package scenarios

import (
	"math"
	"math/rand/v2"
	"time"
)

// Streams are the scenario's independent random streams, one PCG per subsystem, all derived from
// the seed. Keeping them apart means a draw added in one subsystem never shifts another: the same
// seed gives the same arrivals whatever the faults or the strategy do.
type Streams struct {
	Arrivals *rand.Rand // open-loop inter-arrival gaps
	Lengths  *rand.Rand // prompt and output lengths, streaming
	Faults   *rand.Rand // per-request fault and cancellation rolls
	Jitter   *rand.Rand // scrape latency jitter
	// Engines seeds the members' engines (their step-time jitter). It has its own stream so that
	// adding a member, or an engine revival, never shifts the scrape jitter.
	Engines *rand.Rand
	// Outside draws the members' outside load (Member.OutsideRate): its arrivals and shapes.
	Outside *rand.Rand
}

// Stream salts: fixed constants, so a stream's sequence depends only on the seed and its name.
const (
	saltArrivals = 0x6172726976616c73 // "arrivals"
	saltLengths  = 0x6c656e6774687300 // "lengths"
	saltFaults   = 0x6661756c74730000 // "faults"
	saltJitter   = 0x6a69747465720000 // "jitter"
	saltEngines  = 0x656e67696e657300 // "engines"
	saltOutside  = 0x6f75747369646500 // "outside"
)

// NewStreams derives the six streams from seed.
func NewStreams(seed uint64) Streams {
	return Streams{
		Arrivals: rand.New(rand.NewPCG(seed, saltArrivals)),
		Lengths:  rand.New(rand.NewPCG(seed, saltLengths)),
		Faults:   rand.New(rand.NewPCG(seed, saltFaults)),
		Jitter:   rand.New(rand.NewPCG(seed, saltJitter)),
		Engines:  rand.New(rand.NewPCG(seed, saltEngines)),
		Outside:  rand.New(rand.NewPCG(seed, saltOutside)),
	}
}

// Sample draws one token count.
//
// Every product that meets an addition in this file is wrapped in an explicit float64
// conversion: the Go spec lets a compiler fuse x*y+z into one FMA instruction (arm64, ppc64le,
// s390x and amd64 at GOAMD64=v3 do), which rounds once instead of twice and changes the last bit.
// An explicit conversion forces the rounding, so this file's arithmetic gives the same bits on
// every architecture. (The standard library's NormFloat64, ExpFloat64 and math functions carry
// no such promise; their last bits can still differ between architectures.)
func (d Dist) Sample(r *rand.Rand) int {
	if d.Dist == DistConstant {
		return int(d.Value)
	}
	if d.Dist == DistUniform {
		lo, hi := int64(d.Min), int64(d.Max)
		return int(lo + r.Int64N(hi-lo+1))
	}
	return int(math.Round(math.Min(math.Max(d.draw(r), d.Min), d.Max)))
}

// draw is the unclamped real-valued draw of the lognormal and normal distributions.
func (d Dist) draw(r *rand.Rand) float64 {
	z := r.NormFloat64()
	if d.Dist == DistLognormal {
		return math.Exp(d.logExponent(z))
	}
	return d.normal(z)
}

// logExponent is the lognormal's log-space value for the standard normal variate z.
func (d Dist) logExponent(z float64) float64 { return math.Log(d.Median) + float64(d.Sigma*z) }

// normal is the normal distribution's value for the standard normal variate z.
func (d Dist) normal(z float64) float64 { return d.Mean + float64(d.StdDev*z) }

// Expected is the distribution's mean before clamping (exact for constant and uniform).
func (d Dist) Expected() float64 {
	switch d.Dist {
	case DistConstant:
		return d.Value
	case DistUniform:
		return (d.Min + d.Max) / 2
	case DistLognormal:
		return d.Median * math.Exp(d.Sigma*d.Sigma/2)
	}
	return d.Mean
}

// Gap draws the time to the next open-loop arrival.
func (o Open) Gap(r *rand.Rand) time.Duration {
	mean := 1 / o.Rate
	var s float64
	switch o.Process {
	case ProcessConstant:
		s = mean
	case ProcessGamma:
		s = gamma(r, o.Shape) * mean / o.Shape
	default:
		s = r.ExpFloat64() * mean
	}
	return max(time.Duration(s*float64(time.Second)), 1) // strictly increasing arrival times
}

// gamma draws Gamma(k, 1) by Marsaglia and Tsang's method; k < 1 uses the boost
// Gamma(k) = Gamma(k+1) * U^(1/k). Products feeding additions are converted explicitly, as in
// Dist.Sample, so no architecture fuses them into an FMA and the accept test decides alike.
func gamma(r *rand.Rand, k float64) float64 {
	if k < 1 {
		u := r.Float64()
		for u == 0 {
			u = r.Float64()
		}
		return gamma(r, k+1) * math.Pow(u, 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := gammaCube(c, x)
		if v <= 0 {
			continue
		}
		if gammaAccept(d, x, v, r.Float64()) {
			return d * v
		}
	}
}

// gammaCube is Marsaglia and Tsang's v = (1 + c*x)^3, or a non-positive value to reject.
func gammaCube(c, x float64) float64 {
	v := 1 + float64(c*x)
	if v <= 0 {
		return v
	}
	return v * v * v
}

// gammaAccept is Marsaglia and Tsang's squeeze and acceptance test for the cube v and uniform u.
func gammaAccept(d, x, v, u float64) bool {
	return u < 1-float64(0.0331*x*x*x*x) || math.Log(u) < float64(0.5*x*x)+float64(d*(1-v+math.Log(v)))
}

// Shape is one request as the workload generator made it: what the client asks for and the fault
// rolls that decide, at dispatch, whether an active fault window hits it. The rolls are drawn for
// every request, used or not, so the streams stay aligned across runs and strategies.
type Shape struct {
	Prompt, Output int  // tokens: the real prompt length and the requested (and generated) output
	Stream         bool // streamed response
	// CancelAfter > 0: the client gives up this long after dispatch.
	CancelAfter time.Duration
	ErrorRoll   float64 // compared with an errors window's rate
	CutRoll     float64 // compared with a stream_close window's rate
	CutFrac     float64 // where in that window's [after_min, after_max] the cut falls
}

// Generator makes request shapes in request order from the lengths and faults streams.
type Generator struct {
	w       Workload
	lengths *rand.Rand
	faults  *rand.Rand
}

// NewGenerator returns the generator of w over the given streams.
func NewGenerator(w Workload, st Streams) *Generator {
	return &Generator{w: w, lengths: st.Lengths, faults: st.Faults}
}

// Next draws the next request's shape. Every call draws the same number of values from each
// stream.
func (g *Generator) Next() Shape {
	sh := Shape{
		Prompt: g.w.PromptTokens.Sample(g.lengths),
		Output: g.w.OutputTokens.Sample(g.lengths),
		Stream: g.lengths.Float64() < *g.w.Streaming,
	}
	cancelRoll, cancelFrac := g.faults.Float64(), g.faults.Float64()
	sh.ErrorRoll, sh.CutRoll, sh.CutFrac = g.faults.Float64(), g.faults.Float64(), g.faults.Float64()
	if c := g.w.Cancel; c != nil && cancelRoll < c.Share {
		sh.CancelAfter = c.AfterMin + time.Duration(cancelFrac*float64(c.AfterMax-c.AfterMin))
	}
	return sh
}
