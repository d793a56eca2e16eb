// Package cli is the plumbing the five commands under cmd/ share: the exit codes and the usage
// errors that select them, the one error line a command prints, the cobra root and argument checks
// that make every refusal of the caller's input a usage error, and bounded file reads, buffered
// file writes and the terminal test. It holds no command's logic and is imported by cmd/* only.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command: 0 success, 1 runtime failure, 2 usage or invalid input. A
// command with more (anvil-qualify's 3) returns an ExitError.
const (
	ExitFailure = 1
	ExitUsage   = 2
)

// UsageError marks a failure caused by the caller's input (arguments, flags, files): exit 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, args ...any) error { return UsageError{fmt.Errorf(format, args...)} }

// ExitError carries a specific exit code for a failure that is neither usage nor plain failure.
type ExitError struct {
	Code int
	Err  error
}

func (e ExitError) Error() string { return e.Err.Error() }
func (e ExitError) Unwrap() error { return e.Err }

// Code maps a command's error to its exit code: 0 for nil, 2 for a UsageError, an ExitError's own
// code, 1 for anything else. A usage error anywhere in the chain wins over an ExitError.
func Code(err error) int {
	var ue UsageError
	var ee ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &ee):
		return ee.Code
	}
	return ExitFailure
}

// Execute runs root with args under ctx and, when it fails, prints the one line "PROGRAM: ERROR"
// on stderr (the root silences cobra's own). It returns the error for the caller to map with Code.
func Execute(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) error {
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(stderr, root.Name()+":", err)
	}
	return err
}

// NewRoot is a command tree's root: cobra prints neither usage nor errors (Execute prints the one
// line), and every flag error is a UsageError.
func NewRoot(use, short string) *cobra.Command {
	root := &cobra.Command{Use: use, Short: short, SilenceUsage: true, SilenceErrors: true}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError{err} })
	return root
}
