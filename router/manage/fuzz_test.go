package manage_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/manage"
)

// FuzzDecode: the transition body decoder never panics, refuses only with its fixed problems, and
// everything it accepts re-encodes to a canonical body that decodes to the same request.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"action":"status","tier":"t"}`,
		`{"action":"quiesce","tier":"t","member_id":"m00","reason":"upgrade","dry_run":true}`,
		`{"action":"drain","tier":"t","wait_seconds":60}`,
		`{"action":"readmit","tier":"t","member_id":null}`,
		`{"action":"readmit","tier":"t","member_id":""}`,
		`{"action":"status","tier":"t","tier":"u"}`,
		`{"action":"status","tier":"t"} trailing`,
		`{"action":"drain","tier":"t","wait_seconds":1.0}`,
		`{"action":"status","tier":"t","member_id":{"a":[1,2,{"b":null}]}}`,
		"{\"action\":\"status\",\"tier\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := manage.Decode(body)
		if err != nil {
			var p *manage.Problem
			require.True(t, errors.As(err, &p), "a refusal is a fixed problem: %v", err)
			return
		}
		require.NoError(t, req.Validate())
		canon := req.Encode()
		back, err := manage.Decode(canon)
		require.NoError(t, err)
		assert.Equal(t, req, back)
		assert.True(t, bytes.Equal(canon, back.Encode()))
	})
}
