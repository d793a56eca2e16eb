package manage_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/manage"
)

func TestDecodeAcceptsAndEncodesCanonically(t *testing.T) {
	cases := []struct {
		body, canon string
		want        manage.Request
	}{
		{`{"action":"status","tier":"t"}`, `{"action":"status","tier":"t"}`, manage.Request{Action: "status", Tier: "t"}},
		{` { "tier" : "t", "action": "quiesce", "member_id":"m00", "reason":"upgrade", "dry_run":true } `,
			`{"action":"quiesce","tier":"t","member_id":"m00","reason":"upgrade","dry_run":true}`,
			manage.Request{Action: "quiesce", Tier: "t", MemberID: "m00", Reason: "upgrade", DryRun: true}},
		{`{"action":"drain","tier":"t","wait_seconds":3600,"dry_run":false}`, `{"action":"drain","tier":"t","wait_seconds":3600}`,
			manage.Request{Action: "drain", Tier: "t", WaitSeconds: 3600}},
		{"{\"action\":\"readmit\",\"tier\":\"t\"}\n", `{"action":"readmit","tier":"t"}`, manage.Request{Action: "readmit", Tier: "t"}},
	}
	for _, c := range cases {
		got, err := manage.Decode([]byte(c.body))
		require.NoError(t, err, c.body)
		assert.Equal(t, c.want, got)
		assert.Equal(t, c.canon, string(got.Encode()))
	}
}

func TestDecodeRefusals(t *testing.T) {
	cases := []struct {
		name, body string
		want       *manage.Problem
	}{
		{"empty", ``, manage.ErrNotObject},
		{"null", `null`, manage.ErrNotObject},
		{"list", `[{"action":"status","tier":"t"}]`, manage.ErrNotObject},
		{"truncated", `{"action":"status"`, manage.ErrNotObject},
		{"trailing object", `{"action":"status","tier":"t"}{}`, manage.ErrTrailingData},
		{"trailing bytes", `{"action":"status","tier":"t"} x`, manage.ErrTrailingData},
		{"unknown key", `{"action":"status","tier":"t","yes":true}`, manage.ErrUnknownKey},
		{"legacy member key", `{"action":"status","tier":"t","member":"m"}`, manage.ErrUnknownKey},
		{"duplicate", `{"action":"status","tier":"t","tier":"u"}`, manage.ErrDuplicateKey},
		{"duplicate member", `{"action":"status","tier":"t","member_id":"a","member_id":"a"}`, manage.ErrDuplicateKey},
		{"null member", `{"action":"status","tier":"t","member_id":null}`, manage.ErrNull},
		{"null dry_run", `{"action":"status","tier":"t","dry_run":null}`, manage.ErrNull},
		{"empty member", `{"action":"status","tier":"t","member_id":""}`, manage.ErrMemberID},
		{"unsafe member", `{"action":"status","tier":"t","member_id":"a b"}`, manage.ErrMemberID},
		{"ip member", `{"action":"status","tier":"t","member_id":"10.0.0.5"}`, manage.ErrMemberID},
		{"long member", `{"action":"status","tier":"t","member_id":"` + strings.Repeat("m", 65) + `"}`, manage.ErrMemberID},
		{"member list", `{"action":"status","tier":"t","member_id":["m"]}`, manage.ErrType},
		{"tier number", `{"action":"status","tier":7}`, manage.ErrType},
		{"dry_run number", `{"action":"status","tier":"t","dry_run":1}`, manage.ErrType},
		{"wait string", `{"action":"drain","tier":"t","wait_seconds":"5"}`, manage.ErrType},
		{"wait negative", `{"action":"drain","tier":"t","wait_seconds":-1}`, manage.ErrWait},
		{"wait exponent", `{"action":"drain","tier":"t","wait_seconds":1e2}`, manage.ErrWait},
		{"wait leading zero", `{"action":"drain","tier":"t","wait_seconds":05}`, manage.ErrWait},
		{"wait zero", `{"action":"drain","tier":"t","wait_seconds":0}`, manage.ErrWait},
		{"wait huge", `{"action":"drain","tier":"t","wait_seconds":99999999999999999999}`, manage.ErrWait},
		{"wait on status", `{"action":"status","tier":"t","wait_seconds":5}`, manage.ErrWaitNotDrain},
		{"no tier", `{"action":"status"}`, manage.ErrMissingField},
		{"no action", `{"tier":"t"}`, manage.ErrMissingField},
		{"empty action", `{"action":"","tier":"t"}`, manage.ErrAction},
		{"bad action", `{"action":"Quiesce","tier":"t"}`, manage.ErrAction},
		{"empty tier", `{"action":"status","tier":""}`, manage.ErrTier},
		{"bad tier", `{"action":"status","tier":"T"}`, manage.ErrTier},
		{"empty reason", `{"action":"quiesce","tier":"t","reason":""}`, manage.ErrReason},
		{"bad reason", `{"action":"quiesce","tier":"t","reason":"No!"}`, manage.ErrReason},
		{"too large", `{"action":"status","tier":"t"}` + strings.Repeat(" ", manage.MaxBodyBytes), manage.ErrBodyTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := manage.Decode([]byte(c.body))
			assert.Equal(t, c.want, err)
		})
	}
}

func TestValidateMatchesDecode(t *testing.T) {
	cases := []struct {
		req  manage.Request
		want error
	}{
		{manage.Request{Action: "status", Tier: "t"}, nil},
		{manage.Request{Tier: "t"}, manage.ErrMissingField},
		{manage.Request{Action: "status"}, manage.ErrMissingField},
		{manage.Request{Action: "status", Tier: "t", MemberID: "../x"}, manage.ErrMemberID},
		{manage.Request{Action: "quiesce", Tier: "t", Reason: "UP"}, manage.ErrReason},
		{manage.Request{Action: "drain", Tier: "t", WaitSeconds: 3601}, manage.ErrWait},
		{manage.Request{Action: "quiesce", Tier: "t", WaitSeconds: 5}, manage.ErrWaitNotDrain},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.req.Validate(), "%+v", c.req)
		if c.want == nil {
			back, err := manage.Decode(c.req.Encode())
			require.NoError(t, err)
			assert.Equal(t, c.req, back)
		}
	}
	assert.Equal(t, manage.DefaultWaitSeconds, manage.Request{}.Wait())
	assert.Equal(t, 5, manage.Request{WaitSeconds: 5}.Wait())
}
