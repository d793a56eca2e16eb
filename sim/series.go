package sim

import "time"

// leaseAccount is the sim's own count of held leases (audited against admission's snapshots)
// and their time integrals: peaks, time-weighted means and the bucketed timeline for plots.
// Integrals are float64 lease-seconds: a tier of a million leases over a day would overflow int64
// nanoseconds.
type leaseAccount struct {
	last       time.Duration
	end        time.Duration // integrals cover [0, end): the run's duration
	active     []int64
	tierActive int64
	peak       []int64
	tierPeak   int64
	integral   []float64
	tierInt    float64

	bucket    time.Duration
	sum       [][]float64 // [member][bucket] lease-seconds
	tierSum   []float64
	peaks     [][]int64
	tierPeaks []int64
}

func newLeaseAccount(members int, d time.Duration) leaseAccount {
	a := leaseAccount{
		end: d, active: make([]int64, members), peak: make([]int64, members), integral: make([]float64, members),
		bucket: max(d/SeriesBuckets, 1), tierSum: make([]float64, SeriesBuckets), tierPeaks: make([]int64, SeriesBuckets),
	}
	for range members {
		a.sum = append(a.sum, make([]float64, SeriesBuckets))
		a.peaks = append(a.peaks, make([]int64, SeriesBuckets))
	}
	return a
}

// change moves member mi's lease count by delta at now.
func (a *leaseAccount) change(now time.Duration, mi int, delta int64) {
	a.advance(now)
	a.active[mi] += delta
	a.tierActive += delta
	a.peak[mi] = max(a.peak[mi], a.active[mi])
	a.tierPeak = max(a.tierPeak, a.tierActive)
	if b := a.bucketOf(now); b >= 0 {
		a.peaks[mi][b] = max(a.peaks[mi][b], a.active[mi])
		a.tierPeaks[b] = max(a.tierPeaks[b], a.tierActive)
	}
}

func (a *leaseAccount) bucketOf(t time.Duration) int {
	if t < 0 || t >= a.end {
		return -1
	}
	return min(int(t/a.bucket), SeriesBuckets-1)
}

// advance integrates the current counts from the last change to now, bucket by bucket.
func (a *leaseAccount) advance(now time.Duration) {
	for a.last < now && a.last < a.end {
		b := a.bucketOf(a.last)
		stop := min(now, a.end)
		if b < SeriesBuckets-1 {
			stop = min(stop, time.Duration(b+1)*a.bucket)
		}
		dt := (stop - a.last).Seconds()
		// Each product is rounded before it is added (float64(...)): no FMA fusion, so the
		// integrals have the same bits on every architecture.
		for mi, n := range a.active {
			ls := float64(float64(n) * dt)
			a.sum[mi][b] += ls
			a.integral[mi] += ls
			a.peaks[mi][b] = max(a.peaks[mi][b], n)
		}
		ts := float64(float64(a.tierActive) * dt)
		a.tierSum[b] += ts
		a.tierInt += ts
		a.tierPeaks[b] = max(a.tierPeaks[b], a.tierActive)
		a.last = stop
	}
	a.last = max(a.last, now)
}

// close finishes the integrals at now and writes them into the result.
func (a *leaseAccount) close(now time.Duration, r *Result) {
	a.advance(now)
	r.Invariants.PeakTierActive = a.tierPeak
	r.Invariants.TierActiveSeconds = a.tierInt
	for mi := range a.active {
		r.Members[mi].PeakActive = a.peak[mi]
		r.Members[mi].ActiveSeconds = a.integral[mi]
	}
	s := &r.Series
	s.Bucket = a.bucket
	width := func(b int) float64 {
		if b == SeriesBuckets-1 {
			return (a.end - time.Duration(b)*a.bucket).Seconds()
		}
		return a.bucket.Seconds()
	}
	s.TierMean = make([]float64, SeriesBuckets)
	for b := range SeriesBuckets {
		s.TierMean[b] = a.tierSum[b] / width(b)
	}
	s.TierPeak = a.tierPeaks
	for mi := range a.active {
		mean := make([]float64, SeriesBuckets)
		for b := range SeriesBuckets {
			mean[b] = a.sum[mi][b] / width(b)
		}
		s.MemberMean = append(s.MemberMean, mean)
		s.MemberPeak = append(s.MemberPeak, a.peaks[mi])
	}
}
