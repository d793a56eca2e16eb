// Package doccheck holds the documentation's claims to the code: every relative link in README.md
// and docs/**/*.md must resolve (file and #anchor), and every command the docs quote must exist
// (make targets, ./cmd packages, each program's subcommands and flags, checked against its real
// cobra tree). The module root's docs test checks links and make targets; each command's own
// test checks the invocations of its program, because only there is its command tree at hand.
//
// It reads Markdown the way GitHub renders it as far as these checks need: fenced code blocks
// (only shell ones, or ones without a language, hold commands), inline code spans, inline links,
// and heading anchors by GitHub's slug rule.
package doccheck

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// File is one Markdown file: its slash-separated path under the module root and its lines.
type File struct {
	Path  string
	Lines []string
}

// Load reads README.md and every docs/**/*.md under root, sorted by path.
func Load(root string) ([]File, error) {
	paths := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var out []File
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		out = append(out, File{Path: p, Lines: strings.Split(string(data), "\n")})
	}
	return out, nil
}

// Quote is one piece of code the docs show: an inline code span or a line of a shell block (with
// its backslash continuations joined).
type Quote struct {
	File string
	Line int // 1-based
	Text string
}

func (q Quote) String() string { return fmt.Sprintf("%s:%d: `%s`", q.File, q.Line, q.Text) }

var codeSpan = regexp.MustCompile("`([^`]+)`")

// shellBlock reports whether a fenced block's info string marks commands.
func shellBlock(info string) bool {
	switch strings.Fields(info + " x")[0] {
	case "x", "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// Quotes returns every code span and every shell block line of the files.
func Quotes(files []File) []Quote {
	var out []Quote
	for _, f := range files {
		inFence, shell := false, false
		var pending *Quote
		for i, line := range f.Lines {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "```") {
				inFence = !inFence
				shell = inFence && shellBlock(strings.TrimPrefix(trimmed, "```"))
				continue
			}
			if inFence {
				if !shell {
					continue
				}
				if pending != nil {
					pending.Text += " " + trimmed
				} else {
					pending = &Quote{File: f.Path, Line: i + 1, Text: trimmed}
				}
				if strings.HasSuffix(pending.Text, "\\") {
					pending.Text = strings.TrimSuffix(pending.Text, "\\")
					continue
				}
				out = append(out, *pending)
				pending = nil
				continue
			}
			for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
				out = append(out, Quote{File: f.Path, Line: i + 1, Text: m[1]})
			}
		}
	}
	return out
}

// Invocation is one quoted call of a program and the words after it, up to a shell separator.
type Invocation struct {
	Quote Quote
	Args  []string
}

// separators end a command's words.
func separator(w string) bool {
	switch w {
	case "|", "||", "&&", ";", "&", ">", ">>", "2>", "2>&1", "<", "$", "#":
		return true
	}
	return strings.HasPrefix(w, "#") || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>")
}

// Invocations finds every call of program in the quotes: the word itself, or a path ending in
// /program (./cmd/program, bin/program). Words are stripped of the brackets and parentheses the
// docs use for optional and alternative parts; a "|" followed by a flag is an alternative of the
// same call, any other separator ends it. A first word that is neither lower case nor a flag (a
// version in the program's output, an upper-case placeholder) is not a call.
func Invocations(quotes []Quote, program string) []Invocation {
	var out []Invocation
	for _, q := range quotes {
		words := strings.Fields(q.Text)
		for i, w := range words {
			if w != program && !strings.HasSuffix(w, "/"+program) {
				continue
			}
			inv := Invocation{Quote: q}
			for j := i + 1; j < len(words); j++ {
				a := strings.Trim(words[j], "[]()")
				if separator(words[j]) || a == "" {
					if words[j] == "|" && j+1 < len(words) && strings.HasPrefix(strings.Trim(words[j+1], "[]()"), "-") {
						continue
					}
					break
				}
				if a == "..." {
					continue
				}
				inv.Args = append(inv.Args, strings.TrimRight(a, ",;"))
			}
			if len(inv.Args) > 0 && !lowerWord(inv.Args[0]) {
				continue // the program's output ("anvil-router 1.2.0 (revision ...)") or a placeholder
			}
			out = append(out, inv)
		}
	}
	return out
}

// lowerWord reports whether w starts like a subcommand or a flag: a lower-case letter or a dash.
func lowerWord(w string) bool { return w[0] == '-' || w[0] >= 'a' && w[0] <= 'z' }

// Check resolves each invocation against a cobra tree: its subcommand words must name commands
// (alternatives written a|b each one), and its flags must be flags of the command they follow
// (local, persistent or inherited; --help always). It returns one problem per bad invocation.
func Check(root *cobra.Command, invs []Invocation) []string {
	var out []string
	for _, inv := range invs {
		if p := check(root, inv.Args); p != "" {
			out = append(out, fmt.Sprintf("%s: %s", inv.Quote, p))
		}
	}
	return out
}

func check(root *cobra.Command, args []string) string {
	cur, positional := root, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && a != "-" {
			f, problem := flag(cur, a)
			if problem != "" {
				return problem
			}
			if takesValue(f) && !strings.Contains(a, "=") {
				i++ // its value
			}
			continue
		}
		if positional || !cur.HasSubCommands() {
			positional = true
			continue
		}
		if strings.Contains(a, "|") {
			for _, alt := range strings.Split(a, "|") {
				if child(cur, alt) == nil {
					return fmt.Sprintf("%s has no subcommand %q", cur.CommandPath(), alt)
				}
			}
			return "" // alternatives: nothing after them is checked
		}
		next := child(cur, a)
		if next == nil {
			return fmt.Sprintf("%s has no subcommand %q", cur.CommandPath(), a)
		}
		cur = next
	}
	return ""
}

func child(c *cobra.Command, name string) *cobra.Command {
	for _, sub := range c.Commands() {
		if sub.Name() == name || slices.Contains(sub.Aliases, name) {
			return sub
		}
	}
	return nil
}

// flag finds a flag word (--name, --name=value, -x) on c.
func flag(c *cobra.Command, word string) (*pflag.Flag, string) {
	name, _, _ := strings.Cut(strings.TrimLeft(word, "-"), "=")
	if name == "help" || name == "h" {
		return nil, ""
	}
	var f *pflag.Flag
	if strings.HasPrefix(word, "--") {
		f = c.Flags().Lookup(name)
		if f == nil {
			f = c.InheritedFlags().Lookup(name)
		}
	} else if len(name) == 1 {
		f = c.Flags().ShorthandLookup(name)
		if f == nil {
			f = c.InheritedFlags().ShorthandLookup(name)
		}
	}
	if f == nil {
		return nil, fmt.Sprintf("%s has no flag %s", c.CommandPath(), strings.SplitN(word, "=", 2)[0])
	}
	return f, ""
}

func takesValue(f *pflag.Flag) bool {
	return f != nil && f.Value.Type() != "bool" && f.NoOptDefVal == ""
}

// MakeTargets reads the targets a Makefile defines.
func MakeTargets(makefile string) map[string]bool {
	targets := map[string]bool{}
	rule := regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:([^=]|$)`)
	for _, line := range strings.Split(makefile, "\n") {
		if m := rule.FindStringSubmatch(line); m != nil {
			targets[m[1]] = true
		}
	}
	return targets
}

// Makes returns the targets of every quoted `make TARGET...` call (make as a command's first word).
func Makes(quotes []Quote) []Invocation {
	var out []Invocation
	for _, q := range quotes {
		words := strings.Fields(q.Text)
		for i, w := range words {
			if w != "make" || i > 0 && !separator(words[i-1]) {
				continue
			}
			inv := Invocation{Quote: q}
			for _, a := range words[i+1:] {
				if separator(a) || strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
					break
				}
				inv.Args = append(inv.Args, a)
			}
			out = append(out, inv)
		}
	}
	return out
}

// Packages returns every ./cmd/NAME (or any ./path) a quoted `go run` or `go test` names.
func Packages(quotes []Quote) []Invocation {
	var out []Invocation
	for _, q := range quotes {
		words := strings.Fields(q.Text)
		for i := 0; i+2 < len(words); i++ {
			if words[i] != "go" || (words[i+1] != "run" && words[i+1] != "test" && words[i+1] != "build") {
				continue
			}
			inv := Invocation{Quote: q}
			for _, a := range words[i+2:] {
				if separator(a) {
					break
				}
				if strings.HasPrefix(a, "./") {
					inv.Args = append(inv.Args, strings.TrimSuffix(a, "/..."))
				}
			}
			out = append(out, inv)
		}
	}
	return out
}
