package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Link is one inline Markdown link to a relative target.
type Link struct {
	File   string
	Line   int
	Target string
}

var linkPattern = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// Links returns every relative link outside code: [text](target), images included.
func Links(files []File) []Link {
	var out []Link
	for _, f := range files {
		inFence := false
		for i, line := range f.Lines {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
				continue
			}
			if inFence {
				continue
			}
			for _, m := range linkPattern.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
				t := m[1]
				if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") {
					continue
				}
				out = append(out, Link{File: f.Path, Line: i + 1, Target: t})
			}
		}
	}
	return out
}

// BrokenLinks checks every relative link against the files under root: the target file (or
// directory) exists, and an #anchor names a heading of the Markdown file it points into.
func BrokenLinks(root string, files []File) []string {
	byPath := map[string]File{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	var out []string
	for _, l := range Links(files) {
		target, anchor, _ := strings.Cut(l.Target, "#")
		path := l.File
		if target != "" {
			path = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(l.File), target)))
			if strings.HasPrefix(path, "../") {
				out = append(out, fmt.Sprintf("%s:%d: %s leaves the repository", l.File, l.Line, l.Target))
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(path))); err != nil {
				out = append(out, fmt.Sprintf("%s:%d: %s does not exist", l.File, l.Line, l.Target))
				continue
			}
		}
		if anchor == "" {
			continue
		}
		f, ok := byPath[path]
		if !ok {
			out = append(out, fmt.Sprintf("%s:%d: %s: an anchor into a file that is not checked Markdown", l.File, l.Line, l.Target))
			continue
		}
		if !Anchors(f)[anchor] {
			out = append(out, fmt.Sprintf("%s:%d: %s: %s has no heading #%s", l.File, l.Line, l.Target, path, anchor))
		}
	}
	return out
}

// Anchors are the ids GitHub gives a file's headings: lower-cased, punctuation but - and _ dropped,
// spaces as -, and -1, -2... for repeats.
func Anchors(f File) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range f.Lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		if text == "" || !strings.HasPrefix(line[strings.IndexFunc(line, func(r rune) bool { return r != '#' }):], " ") {
			continue
		}
		slug := Slug(text)
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// Slug is GitHub's anchor of a heading's text.
func Slug(heading string) string {
	heading = codeSpan.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
