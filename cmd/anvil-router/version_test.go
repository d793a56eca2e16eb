package main

import (
	"encoding/json"
	"regexp"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildVersion(t *testing.T) {
	stamped := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123abc"}, {Key: "vcs.modified", Value: "false"}}}
	dirty := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123abc"}, {Key: "vcs.modified", Value: "true"}}}
	installed := &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}
	cases := []struct {
		name           string
		link, linkRev  string
		bi             *debug.BuildInfo
		ok             bool
		want, wantRevs string
	}{
		{"linker values win", "0.3.0", "feedbeef", dirty, true, "0.3.0", "feedbeef"},
		{"linker version, stamped revision", "0.3.0", "", stamped, true, "0.3.0", "0123abc"},
		{"checkout build", "", "", stamped, true, "devel", "0123abc"},
		{"modified checkout", "", "", dirty, true, "devel", "0123abc-dirty"},
		{"go install at a version", "", "", installed, true, "v0.4.0", "unknown"},
		{"no build info", "", "", nil, false, "devel", "unknown"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := buildVersion(c.link, c.linkRev, c.bi, c.ok)
			assert.Equal(t, buildInfo{Version: c.want, Revision: c.wantRevs}, got)
		})
	}
}

func TestVersionCommand(t *testing.T) {
	code, out, err := runCmd(t, "version")
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Regexp(t, regexp.MustCompile(`^anvil-router \S+ \(revision \S+\)\n$`), out)

	code, out, err = runCmd(t, "version", "--json")
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	var got map[string]string
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.ElementsMatch(t, []string{"version", "revision"}, keys(got))
	assert.NotEmpty(t, got["version"])
	assert.NotEmpty(t, got["revision"])

	code, _, err = runCmd(t, "version", "extra")
	assert.Error(t, err)
	assert.NotEqual(t, 0, code)
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
