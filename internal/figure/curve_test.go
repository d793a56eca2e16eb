package figure

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/ceiling"
)

// A calibration plot renders with its points, and with none at all (a sweep whose first step could
// not be measured still writes its plot), in either format.
func TestCalibrationFigureWrites(t *testing.T) {
	points := []ceiling.Point{
		{Ceiling: 1, Throughput: 100, TTFTP50: 2, TTFTP99: 3, TPOTP50: 1, TPOTP99: 1.5},
		{Ceiling: 2, Throughput: 190, TTFTP50: 2.5, TTFTP99: 4, TPOTP50: 1.1, TPOTP99: 1.7},
		{Ceiling: 3, Throughput: 200, TTFTP50: 30, TTFTP99: 60, TPOTP50: 1.1, TPOTP99: 1.8},
	}
	for name, pts := range map[string][]ceiling.Point{"points": points, "none": nil, "zero latencies": {{Ceiling: 1, Throughput: 5}}} {
		t.Run(name, func(t *testing.T) {
			f, err := Calibration("c", "calibration", pts, 2)
			require.NoError(t, err)
			for _, format := range []string{PNG, SVG} {
				var b bytes.Buffer
				require.NoError(t, f.WriteTo(&b, format))
				assert.NotEmpty(t, b.Bytes())
			}
		})
	}
}
