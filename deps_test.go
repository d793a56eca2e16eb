package anvil_test

// This file states the module's import policy, in the spirit of the standard library's own
// go/build/deps_test.go. It is policy, not something to edit to make a build pass: if a rule here
// blocks a change, the change is in the wrong package. The rules are DESIGN.md's "The house".

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/anvil-llm/anvil"

// pkg is one package directory of the module, read from its non-test Go files.
type pkg struct {
	rel     string              // path relative to the module root, "/"-separated
	imports map[string][]string // import path -> files importing it
	files   map[string]*ast.File
	fset    *token.FileSet
}

func loadPackages(t *testing.T) []*pkg {
	t.Helper()
	byDir := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			if path != "." && isModuleRoot(path) {
				return filepath.SkipDir // a nested module (deploy/) is another module, outside this policy
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		p := byDir[dir]
		if p == nil {
			p = &pkg{rel: dir, imports: map[string][]string{}, files: map[string]*ast.File{}, fset: fset}
			byDir[dir] = p
		}
		p.files[path] = f
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			p.imports[ip] = append(p.imports[ip], path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking the module: %v", err)
	}
	out := make([]*pkg, 0, len(byDir))
	for _, p := range byDir {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out
}

// isModuleRoot reports whether dir holds its own go.mod: the go command leaves such a directory out of
// this module's ./..., and so does the policy walker.
func isModuleRoot(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// local returns the module-relative form of an import path, or "" if it is not in this module.
func local(path string) string {
	if path == modulePath {
		return "."
	}
	if rest, ok := strings.CutPrefix(path, modulePath+"/"); ok {
		return rest
	}
	return ""
}

func under(rel, root string) bool { return rel == root || strings.HasPrefix(rel, root+"/") }

func external(path, mod string) bool { return path == mod || strings.HasPrefix(path, mod+"/") }

var pureRoots = []string{"router/scheduler", "fakevllm/engine", "sim/event"}

func isPure(rel string) bool {
	for _, r := range pureRoots {
		if rel == r {
			return true
		}
	}
	return false
}

func TestImportPolicy(t *testing.T) {
	pkgs := loadPackages(t)
	if len(pkgs) == 0 {
		t.Fatal("no packages found: the policy test must see the module")
	}
	for _, p := range pkgs {
		if under(p.rel, "deploy") {
			t.Errorf("the walker entered the nested module at %s", p.rel)
		}
	}
	for _, p := range pkgs {
		for ip, files := range p.imports {
			if msg := violation(p.rel, ip); msg != "" {
				t.Errorf("%s imports %s (%s): %s", p.rel, ip, files[0], msg)
			}
		}
	}
}

// violation returns why package rel may not import ip, or "".
func violation(rel, ip string) string {
	l := local(ip)
	switch {
	case isPure(rel) && !isStd(ip):
		return "pure packages import the standard library only"
	case isPure(rel) && (ip == "math/rand" || ip == "os" || ip == "net" || ip == "net/http" || ip == "log" || ip == "log/slog" || ip == "sync"):
		return "pure packages do no I/O, no logging, no locking and use no global random source"
	case rel == "router/admission" && !isStd(ip) && l != "router/scheduler":
		return "admission imports the standard library and router/scheduler only"
	case rel == "router/admission" && (ip == "os" || ip == "net" || ip == "net/http" || ip == "log" || ip == "log/slog" || ip == "math/rand"):
		return "admission does no I/O and no logging"
	case under(rel, "router") && l != "" && (under(l, "sim") || under(l, "fakevllm") || under(l, "bench") || under(l, "qualification") || under(l, "scenarios")):
		return "nothing under router/ imports sim, fakevllm, bench, qualification or scenarios"
	case under(rel, "sim") && (l == "router/server" || l == "router/relay" || ip == "net/http" || external(ip, "github.com/gin-gonic/gin")):
		return "the simulator never touches the server, the relay, gin or net/http"
	case under(rel, "sim") && l != "" && under(l, "fakevllm") && l != "fakevllm/engine" && l != "fakevllm/profile":
		return "the simulator uses the engine model, never the fake HTTP server"
	case under(rel, "bench") && l != "" && (under(l, "router") || under(l, "sim") || under(l, "fakevllm")):
		return "bench is a black-box HTTP client"
	case under(rel, "fakevllm") && l != "" && under(l, "router"):
		return "fakevllm is scraped like vLLM; it never imports the router"
	case external(ip, "github.com/gin-gonic/gin") && rel != "router/server" && !under(rel, "fakevllm"):
		return "gin appears only in router/server and fakevllm"
	case external(ip, "github.com/spf13/viper") && rel != "router/config" && !under(rel, "cmd"):
		return "viper appears only in router/config and cmd/*"
	case external(ip, "github.com/prometheus/client_golang") && rel != "router/capacity" && rel != "router/server" && !under(rel, "fakevllm"):
		return "client_golang appears only in router/capacity, router/server and fakevllm"
	case l != "" && under(l, "qualification") && !under(rel, "qualification") && !under(rel, "cmd/anvil-qualify"):
		return "nothing imports qualification"
	case l != "" && under(l, "cmd"):
		return "nothing imports cmd/*"
	case under(rel, "cmd") && l != "" && under(l, "fakevllm") && rel != "cmd/anvil-router" && rel != "cmd/anvil-fakevllm":
		return "only anvil-router (serve --demo) and anvil-fakevllm hold fake members"
	}
	return ""
}

// forbiddenCalls are the package-qualified identifiers that pure code must never use: clocks, sleeps,
// timers and the global random source.
var forbiddenCalls = map[string]map[string]bool{
	"time": {"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "Tick": true,
		"NewTimer": true, "NewTicker": true, "AfterFunc": true},
	"math/rand/v2": {"Int": true, "IntN": true, "Int32": true, "Int32N": true, "Int64": true, "Int64N": true,
		"Uint32": true, "Uint64": true, "Uint64N": true, "UintN": true, "Float32": true, "Float64": true,
		"Perm": true, "Shuffle": true, "N": true, "ExpFloat64": true, "NormFloat64": true},
}

func TestPureCodeHasNoClockGoroutinesOrGlobalRandom(t *testing.T) {
	for _, p := range loadPackages(t) {
		if !isPure(p.rel) && p.rel != "router/admission" {
			continue
		}
		for _, f := range p.files {
			names := importNames(f)
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.GoStmt:
					t.Errorf("%s: %s starts a goroutine", p.rel, p.fset.Position(n.Pos()))
				case *ast.SelectorExpr:
					id, ok := n.X.(*ast.Ident)
					if !ok {
						return true
					}
					if path, ok := names[id.Name]; ok && forbiddenCalls[path][n.Sel.Name] {
						t.Errorf("%s: %s uses %s.%s", p.rel, p.fset.Position(n.Pos()), path, n.Sel.Name)
					}
				}
				return true
			})
		}
	}
}

// importNames maps the local name of each import to its path.
func importNames(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if path == "math/rand/v2" {
			name = "rand"
		}
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = path
	}
	return out
}

// TestNoPackageLevelMutableState allows package-level variables only when they are sentinel errors,
// compiled regular expressions, embedded files, interface assertions (_), or other values built once by
// a constructor call whose result is never reassigned; it rejects variables without an initializer,
// which can only exist to be assigned later.
func TestNoPackageLevelMutableState(t *testing.T) {
	for _, p := range loadPackages(t) {
		for _, f := range p.files {
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				embedded := hasEmbedDirective(gd.Doc)
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					if embedded || hasEmbed(vs) {
						continue
					}
					for i, n := range vs.Names {
						if n.Name == "_" {
							continue
						}
						if i >= len(vs.Values) {
							t.Errorf("%s: package-level variable %s has no initializer (mutable state)", p.fset.Position(n.Pos()), n.Name)
							continue
						}
						if assigned(p, n.Name, vs) {
							t.Errorf("%s: package-level variable %s is assigned after initialization", p.fset.Position(n.Pos()), n.Name)
						}
					}
				}
			}
		}
	}
}

func hasEmbed(vs *ast.ValueSpec) bool { return hasEmbedDirective(vs.Doc) }

// hasEmbedDirective reads the raw comment lines: CommentGroup.Text drops //go: directives.
func hasEmbedDirective(g *ast.CommentGroup) bool {
	if g == nil {
		return false
	}
	for _, c := range g.List {
		if strings.HasPrefix(c.Text, "//go:embed") {
			return true
		}
	}
	return false
}

// assigned reports whether any function in the package assigns to the package-level name.
func assigned(p *pkg, name string, spec *ast.ValueSpec) bool {
	found := false
	for _, f := range p.files {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if !ok || as.Tok == token.DEFINE {
					return true
				}
				for _, lhs := range as.Lhs {
					if id, ok := lhs.(*ast.Ident); ok && id.Name == name && (id.Obj == nil || id.Obj.Decl == spec) {
						found = true
					}
				}
				return true
			})
		}
	}
	return found
}

func TestEveryPackageHasADocComment(t *testing.T) {
	for _, p := range loadPackages(t) {
		if strings.HasPrefix(p.rel, "cmd/") || p.rel == "." {
			continue
		}
		documented := false
		for _, f := range p.files {
			if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
				documented = true
			}
		}
		if !documented {
			t.Errorf("package %s has no doc comment", p.rel)
		}
	}
}

func TestDocGuidesExist(t *testing.T) {
	for _, dir := range []string{"router", "sim", "qualification"} {
		if _, err := os.Stat(dir); err != nil {
			continue // the package does not exist yet
		}
		if _, err := os.Stat(filepath.Join(dir, "doc.go")); err != nil {
			t.Errorf("%s has no doc.go reading guide", dir)
		}
	}
}

func TestPolicySelfCheck(t *testing.T) {
	// The policy must actually refuse what DESIGN.md forbids; a table of known-bad edges proves the
	// rules are live, not vacuous.
	bad := [][2]string{
		{"router/scheduler", "github.com/stretchr/testify/assert"},
		{"router/scheduler", "math/rand"},
		{"fakevllm/engine", "os"},
		{"router/admission", "net/http"},
		{"router/admission", modulePath + "/router/config"},
		{"router/routing", modulePath + "/sim"},
		{"router/server", modulePath + "/fakevllm"},
		{"sim", modulePath + "/router/server"},
		{"sim", "net/http"},
		{"sim", modulePath + "/fakevllm"},
		{"bench", modulePath + "/router/config"},
		{"fakevllm", modulePath + "/router/relay"},
		{"router/routing", "github.com/gin-gonic/gin"},
		{"router/server", "github.com/spf13/viper"},
		{"router/routing", "github.com/prometheus/client_golang/prometheus"},
		{"router/server", modulePath + "/qualification"},
		{"router/server", modulePath + "/cmd/anvil-router"},
		{"cmd/anvil-sim", modulePath + "/fakevllm"},
	}
	for _, b := range bad {
		if violation(b[0], b[1]) == "" {
			t.Errorf("policy allows %s -> %s", b[0], b[1])
		}
	}
	good := [][2]string{
		{"router/admission", modulePath + "/router/scheduler"},
		{"router/server", "github.com/gin-gonic/gin"},
		{"router/config", "github.com/spf13/viper"},
		{"sim", modulePath + "/fakevllm/engine"},
		{"cmd/anvil-router", modulePath + "/fakevllm"},
		{"fakevllm", "github.com/prometheus/client_golang/prometheus"},
	}
	for _, g := range good {
		if msg := violation(g[0], g[1]); msg != "" {
			t.Errorf("policy refuses %s -> %s: %s", g[0], g[1], msg)
		}
	}
}
