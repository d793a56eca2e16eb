package server

import "time"

// SetMemberMetricsTimeout shortens the member page bound for one test; the returned func restores it.
// Tests that call it must not run in parallel with other member-page tests.
func SetMemberMetricsTimeout(d time.Duration) (restore func()) {
	old := memberMetricsTimeout
	memberMetricsTimeout = d
	return func() { memberMetricsTimeout = old }
}
