package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCode(t *testing.T) {
	for name, c := range map[string]struct {
		err  error
		want int
	}{
		"nil":                  {nil, 0},
		"plain":                {errors.New("boom"), ExitFailure},
		"usage":                {Usagef("bad %s", "flag"), ExitUsage},
		"wrapped usage":        {fmt.Errorf("ctx: %w", UsageError{errors.New("x")}), ExitUsage},
		"exit error":           {ExitError{3, errors.New("unrestored")}, 3},
		"usage wins over exit": {ExitError{3, UsageError{errors.New("x")}}, ExitUsage},
		"wrapped exit error":   {fmt.Errorf("run: %w", ExitError{1, errors.New("verdict fail")}), 1},
	} {
		t.Run(name, func(t *testing.T) { assert.Equal(t, c.want, Code(c.err)) })
	}
}

// A root built here prints exactly one error line, and flag and argument refusals are usage errors.
func TestExecute(t *testing.T) {
	for name, c := range map[string]struct {
		args     []string
		wantCode int
		wantLine string
	}{
		"success":         {[]string{"sub"}, 0, ""},
		"unknown flag":    {[]string{"sub", "--nope"}, ExitUsage, "prog: unknown flag: --nope\n"},
		"extra argument":  {[]string{"sub", "x"}, ExitUsage, "prog: sub takes no arguments, got 1\n"},
		"exact refused":   {[]string{"one"}, ExitUsage, "prog: accepts 1 arg(s), received 0\n"},
		"maximum refused": {[]string{"most", "a", "b"}, ExitUsage, "prog: accepts at most 1 arg(s), received 2\n"},
		"runtime failure": {[]string{"fail"}, ExitFailure, "prog: boom\n"},
	} {
		t.Run(name, func(t *testing.T) {
			root := NewRoot("prog", "a test program")
			run := func(*cobra.Command, []string) error { return nil }
			root.AddCommand(&cobra.Command{Use: "sub", Args: NoArgs, RunE: run},
				&cobra.Command{Use: "one", Args: ExactArgs(1), RunE: run},
				&cobra.Command{Use: "most", Args: MaximumNArgs(1), RunE: run},
				&cobra.Command{Use: "fail", RunE: func(*cobra.Command, []string) error { return errors.New("boom") }})
			var out, errOut bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&errOut)
			err := Execute(context.Background(), root, c.args, &errOut)
			assert.Equal(t, c.wantCode, Code(err))
			assert.Equal(t, c.wantLine, errOut.String())
			assert.Empty(t, out.String(), "cobra prints no usage")
		})
	}
}

func TestUsageArgs(t *testing.T) {
	root := &cobra.Command{Use: "prog"}
	sub := &cobra.Command{Use: "sub", Args: cobra.NoArgs, RunE: func(*cobra.Command, []string) error { return nil }}
	root.AddCommand(sub)
	UsageArgs(root)
	err := sub.Args(sub, []string{"x"})
	require.Error(t, err)
	assert.Equal(t, ExitUsage, Code(err))
	assert.NoError(t, sub.Args(sub, nil))
}

func TestReadBounded(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	require.NoError(t, os.WriteFile(small, []byte("12345"), 0o600))
	for name, c := range map[string]struct {
		path     string
		limit    int64
		want     string
		wantCode int
		wantMsg  string
	}{
		"within":    {small, 5, "12345", 0, ""},
		"over":      {small, 4, "", ExitUsage, small + " is larger than 4 bytes"},
		"no such":   {filepath.Join(dir, "none"), 5, "", ExitUsage, "no such file"},
		"directory": {dir, 5, "", ExitFailure, "read " + dir},
	} {
		t.Run(name, func(t *testing.T) {
			data, err := ReadBounded(c.path, c.limit)
			assert.Equal(t, c.wantCode, Code(err))
			if c.wantMsg != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantMsg)
				return
			}
			assert.Equal(t, c.want, string(data))
		})
	}
}

func TestReadAtMost(t *testing.T) {
	data, err := ReadAtMost(strings.NewReader("abc"), 3)
	require.NoError(t, err)
	assert.Equal(t, "abc", string(data))
	_, err = ReadAtMost(strings.NewReader("abcd"), 3)
	assert.ErrorIs(t, err, ErrTooLarge)
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	require.NoError(t, WriteFile(path, func(w io.Writer) error { _, err := io.WriteString(w, "hello"); return err }))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(b))

	err = WriteFile(path, func(io.Writer) error { return errors.New("fill failed") })
	require.Error(t, err)
	assert.Equal(t, "write "+path+": fill failed", err.Error())

	assert.Error(t, WriteFile(filepath.Join(dir, "none", "out"), func(io.Writer) error { return nil }))
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, map[string]int{"a": 1}))
	assert.Equal(t, "{\n  \"a\": 1\n}\n", b.String())
}
