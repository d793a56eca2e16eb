package figure

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPoints(t *testing.T) {
	sorted := make([]float64, 0, 1001)
	for i := 0; i <= 1000; i++ {
		sorted = append(sorted, float64(i)) // a zero first: a log axis has none
	}
	xys := Points(sorted)
	require.NotEmpty(t, xys)
	assert.LessOrEqual(t, len(xys), maxCDFPoints+2)
	assert.Equal(t, 1000.0, xys[len(xys)-1].X, "the last value is always a point")
	assert.Equal(t, 1.0, xys[len(xys)-1].Y)
	for i, p := range xys {
		assert.Positive(t, p.X)
		if i > 0 {
			assert.Greater(t, p.X, xys[i-1].X)
			assert.Greater(t, p.Y, xys[i-1].Y)
		}
	}
	assert.Equal(t, 2, len(Points([]float64{1, 2})))
	assert.Empty(t, Points(nil))
	assert.Empty(t, Points([]float64{0, 0}))
}

// TestCDFFigureWrites: a CDF with lines and one without any (a linear, empty frame) both render in
// either format; another format is refused.
func TestCDFFigureWrites(t *testing.T) {
	full := NewCDF("latency", "latency (ms, log scale)")
	require.NoError(t, full.Add("a ttft", []float64{1, 2, 3, 40}, 0, 0))
	require.NoError(t, full.Add("a e2e", []float64{0}, 0, 1), "nothing above zero adds nothing")
	empty := NewCDF("nothing", "latency (ms, log scale)")
	for _, f := range []Figure{full.Figure("full"), empty.Figure("empty")} {
		for _, format := range []string{PNG, SVG} {
			var b bytes.Buffer
			require.NoError(t, f.WriteTo(&b, format), f.Name+" "+format)
			assert.NotZero(t, b.Len())
		}
		assert.ErrorIs(t, f.WriteTo(&bytes.Buffer{}, "gif"), ErrFormat)
	}
	assert.Equal(t, 1, full.lines)
}
