package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	cmdline "github.com/anvil-llm/anvil/internal/cli"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect router configuration"}
	var envFile string
	var skipFiles bool
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a config file and the files it names; print it normalized, secrets redacted",
		Long: "Validate a config file as serve reads it (the environment, the token files) and open every\n" +
			"file it names as serve would at start: the TLS certificate and key as a pair, the decision\n" +
			"log's JSONL file (or its directory, creatable), the intent file (valid, not a link) and its\n" +
			"directory (writable). Every problem is printed, one a line, as FILE:LINE: ERROR (the line of\n" +
			"the setting, when the document has it), and the exit status is 2. Run it as the user the\n" +
			"router runs as. Nothing is left behind.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConfigCheck(cmd, args[0], envFile, skipFiles)
		},
	}
	check.Flags().StringVar(&envFile, "env-file", "", "read variables from FILE (NAME=VALUE lines, as docker's --env-file) over the process environment")
	check.Flags().BoolVar(&skipFiles, "skip-files", false, "do not open the TLS pair, the decision log or the intent file (to check a config away from its host)")
	cmd.AddCommand(check)
	return cmd
}

func runConfigCheck(cmd *cobra.Command, path, envFile string, skipFiles bool) error {
	env := os.LookupEnv
	if envFile != "" {
		data, err := cmdline.ReadBounded(envFile, cmdline.MaxEnvFileBytes)
		if err != nil {
			return err
		}
		vars, err := cmdline.ParseEnvFile(data)
		if err != nil {
			return cmdline.UsageError{Err: fmt.Errorf("%s: %w", envFile, err)}
		}
		env = overlayEnv(vars)
	}
	// The verdict is serve's own read; the diagnosis lists everything it would refuse.
	loaded, err := load.NewSource(path, env).Load(cmd.Context())
	d := load.Diagnose(path, env)
	var found []problem
	for _, p := range d.Problems {
		var ce *config.Error
		line := 0
		if errors.As(p, &ce) {
			line = d.Line(ce.Path)
		}
		found = append(found, problem{line, p.Error()})
	}
	if err != nil && len(found) == 0 {
		found = append(found, problem{0, err.Error()}) // a refusal only the load sees: the file changed while read
	}
	if d.Document != nil && !skipFiles {
		for _, p := range server.CheckStartFiles(startFiles(*d.Document)) {
			// The setting, then serve's own error for it (without a repeat of the setting).
			text := "config: " + p.Key + ": " + strings.TrimPrefix(p.Err.Error(), p.Key+": ")
			found = append(found, problem{d.Line(p.Key), text})
		}
	}
	if len(found) > 0 {
		return problems(path, found)
	}
	out, err := loaded.Config.Normalized()
	if err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(out)
	return err
}

// problem is one refusal and the line of its setting (0 when the document has none).
type problem struct {
	line int
	text string
}

// problems is the usage error that ends a failed check: a count, then every problem on a line of
// its own, as FILE:LINE: ERROR (FILE: ERROR without a line), in line order, those without a line
// last.
func problems(path string, found []problem) error {
	slices.SortStableFunc(found, func(a, b problem) int {
		switch {
		case a.line == b.line:
			return 0
		case a.line == 0:
			return 1
		case b.line == 0:
			return -1
		}
		return a.line - b.line
	})
	lines := make([]string, 0, len(found))
	for _, p := range found {
		if p.line > 0 {
			lines = append(lines, path+":"+strconv.Itoa(p.line)+": "+p.text)
		} else {
			lines = append(lines, path+": "+p.text)
		}
	}
	noun := "problems"
	if len(lines) == 1 {
		noun = "problem"
	}
	return cmdline.Usagef("%s: %d %s:\n%s", path, len(lines), noun, strings.Join(lines, "\n"))
}

// startFiles are the files serve opens at start, as the document names them (none has an
// environment override).
func startFiles(doc config.Document) server.StartFiles {
	var f server.StartFiles
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	if doc.TLS != nil {
		f.TLS = config.TLS{CertFile: deref(doc.TLS.CertFile), KeyFile: deref(doc.TLS.KeyFile)}
	}
	if doc.DecisionLog != nil {
		f.DecisionLog = deref(doc.DecisionLog.JSONLPath)
	}
	f.IntentFile = deref(doc.IntentFile)
	return f
}
