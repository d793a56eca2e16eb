package scheduler_test

import (
	"fmt"
	"time"

	"github.com/anvil-llm/anvil/router/scheduler"
)

// Two members at equal local load: the one with fresh telemetry wins over the one whose
// telemetry is unknown, whatever the rotation says.
func ExampleRank() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fresh := scheduler.NormalizePressure(now, scheduler.Observation{
		ObservedAt:        now.Add(-time.Second),
		Successful:        true,
		RequestsRunning:   scheduler.Metric{Value: 3, Present: true},
		RequestsWaiting:   scheduler.Metric{Value: 0, Present: true},
		SchedulerCapacity: 4,
	})
	a, _ := scheduler.NewCandidate("gpu-a", true, 1, 4, scheduler.UnknownPressure())
	b, _ := scheduler.NewCandidate("gpu-b", true, 1, 4, fresh)
	d, err := scheduler.Rank([]scheduler.Candidate{a, b}, 0)
	if err != nil {
		panic(err)
	}
	id, _ := d.SelectedMemberID()
	fmt.Println(d.Reason(), id, d.EligibleMemberIDs())
	for _, s := range d.Scores() {
		ppm, ok := s.UpstreamPressurePPM()
		fmt.Println(s.MemberID(), s.LocalActive(), s.LocalCapacity(), s.UpstreamUnknown(), ppm, ok, s.Freshness(), s.RotatingRank())
	}
	// Output:
	// selected gpu-b [gpu-a gpu-b]
	// gpu-b 1 4 false 750000 true fresh 1
	// gpu-a 1 4 true 0 false unknown 0
}
