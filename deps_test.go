package anvil_test

// This file states the module's house rules, in the spirit of the standard library's own
// go/build/deps_test.go. It is policy, not something to edit to make a build pass: if a rule here
// blocks a change, the change is in the wrong package. The rules' home in prose is the section
// "The import rules" of docs/ARCHITECTURE.md, which lists them in the order rules() states them:
// a rule added here is added there.
//
// The rules are checked on the real build graph (golang.org/x/tools/go/packages over go list):
// "never imports" rules hold transitively, and code rules (no goroutines, no clock, no package-level
// writes) are checked with type information, so an alias, a dot-import or a write through a field
// cannot slip past. TestPolicyCatchesPlantedViolations plants one violation of each kind in an
// overlay copy of a real package and shows the policy failing on it, and fails when some import rule
// reports no plant at all, so no rule passes vacuously;
// TestPolicySubjectsExist makes a rule about a package that does not exist fail loudly.

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/tools/go/packages"
)

const modulePath = "github.com/anvil-llm/anvil"

// pure are DESIGN.md's PURE packages: standard library (and other pure packages) only, transitively;
// no clock, no goroutines, no global random source, no logging or printing, no I/O, no locking.
var pure = []string{"router/ident", "router/scheduler", "router/health", "engine", "sim/event",
	"sim/policy", "internal/jsonscan", "internal/sse", "internal/wav", "internal/ceiling", "internal/gctune"}

// quiet are packages held to the pure packages' code rules (no goroutines, no clock, no global
// random source, no printing) without being pure: admission locks, the simulator writes its decision
// records through the decision log, the pressure core has sentinel-error formatting and locks nothing,
// and the capacity views project what they are handed (a scrape's goroutine is the caller's); the
// walk (routing) takes time as values and locks its passive-health shell, and the request parser
// formats its key errors.
var quiet = []string{"router/admission", "router/pressure", "router/pressure/adapter", "sim", "router/capacity", "router/routing", "router/request", "sim/calibrate",
	"internal/enginepage"}

// netFree are the packages whose whole build graph must hold neither net/http nor viper: the walk,
// its request parser and cores, and the simulator that drives them.
var netFree = []string{"sim", "router/pressure/adapter", "router/routing", "router/request", "router/admission", "router/scheduler", "engine", "sim/event", "sim/policy", "sim/calibrate",
	"internal/enginepage"}

// qualificationMay are the module packages qualification may depend on, transitively: the bench and
// the scenarios it takes load from (with their pure cores), the transition grammar and client, and
// the router's wire models it reads answers into (the readiness rule, the decision summary). Never
// admission, routing, the server, the simulator or the fake.
var qualificationMay = []string{"bench", "internal/figure", "internal/ceiling", "internal/jsonscan", "internal/sse", "scenarios", "yamlschema", "router/manage", "router/ident", "router/readiness",
	"router/decisionlog", "router/scheduler", "engine", "engine/profile"}

// importRule is one "never" rule over a subject's imports: direct ones, or every package in its
// build graph when transitive.
type importRule struct {
	why        string
	subjects   []string // packages the rule is about; each must exist (TestPolicySubjectsExist)
	applies    func(rel string) bool
	transitive bool
	forbids    func(rel, dep string) bool // rel: the subject; dep: an import path
}

func exact(names ...string) func(string) bool {
	return func(rel string) bool { return slices.Contains(names, rel) }
}

func under(rel, root string) bool { return rel == root || strings.HasPrefix(rel, root+"/") }

func underAny(roots ...string) func(string) bool {
	return func(rel string) bool {
		for _, r := range roots {
			if under(rel, r) {
				return true
			}
		}
		return false
	}
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

func external(path, mod string) bool { return path == mod || strings.HasPrefix(path, mod+"/") }

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func rules() []importRule {
	return []importRule{
		{why: "pure packages depend on the standard library and other pure packages only",
			subjects: pure, applies: exact(pure...), transitive: true,
			forbids: func(_, dep string) bool { return !isStd(dep) && !slices.Contains(pure, local(dep)) }},
		{why: "pure packages do no I/O, no logging, no locking and use no global random source",
			subjects: pure, applies: exact(pure...),
			forbids: func(_, dep string) bool {
				return slices.Contains([]string{"os", "net", "net/http", "log", "log/slog", "math/rand", "sync", "io/fs", "syscall"}, dep)
			}},
		{why: "admission depends on the standard library, router/ident and router/scheduler only",
			subjects: []string{"router/admission"}, applies: exact("router/admission"), transitive: true,
			forbids: func(_, dep string) bool {
				return !isStd(dep) && local(dep) != "router/ident" && local(dep) != "router/scheduler"
			}},
		{why: "admission does no I/O and no logging",
			subjects: []string{"router/admission"}, applies: exact("router/admission"),
			forbids: func(_, dep string) bool {
				return slices.Contains([]string{"os", "net", "net/http", "log", "log/slog", "math/rand", "io/fs", "syscall"}, dep)
			}},
		{why: "the walk, its cores and the simulator link neither net/http nor viper",
			subjects: netFree, applies: exact(netFree...), transitive: true,
			forbids: func(_, dep string) bool { return dep == "net/http" || external(dep, "github.com/spf13/viper") }},
		{why: "the walk, its cores and the simulator never link OpenTelemetry: tracing is a shell concern",
			subjects: append([]string{"sim/report"}, netFree...),
			applies:  func(rel string) bool { return slices.Contains(netFree, rel) || under(rel, "sim") }, transitive: true,
			forbids: func(_, dep string) bool { return external(dep, "go.opentelemetry.io") }},
		{why: "nothing under router/ depends on sim, fakevllm, bench, qualification or scenarios",
			subjects: []string{"router/server", "sim", "fakevllm", "scenarios"}, applies: underAny("router"), transitive: true,
			forbids: func(_, dep string) bool {
				l := local(dep)
				return l != "" && underAny("sim", "fakevllm", "bench", "qualification", "scenarios")(l)
			}},
		{why: "the simulator never touches the server, the relay or gin",
			subjects: []string{"sim"}, applies: underAny("sim"), transitive: true,
			forbids: func(_, dep string) bool {
				l := local(dep)
				return l == "router/server" || l == "router/relay" || external(dep, "github.com/gin-gonic/gin")
			}},
		{why: "the simulator uses the engine model, never the fake HTTP server",
			subjects: []string{"sim", "fakevllm"}, applies: underAny("sim"), transitive: true,
			forbids: func(_, dep string) bool {
				l := local(dep)
				return l != "" && under(l, "fakevllm")
			}},
		{why: "the engine model is the leaf under fakevllm, sim and scenarios: it depends on none of them, nor on the router, the bench or qualification",
			subjects: []string{"engine", "engine/profile"}, applies: underAny("engine"), transitive: true,
			forbids: func(_, dep string) bool {
				l := local(dep)
				return l != "" && underAny("fakevllm", "sim", "scenarios", "router", "bench", "qualification")(l)
			}},
		{why: "bench is a black-box HTTP client: no router code, simulator or fake beyond the pure cores of the scenarios",
			subjects: []string{"bench", "scenarios"}, applies: underAny("bench"), transitive: true,
			forbids: func(_, dep string) bool {
				l := local(dep)
				return l != "" && underAny("router", "sim", "fakevllm")(l) && !slices.Contains(pure, l)
			}},
		{why: "fakevllm is scraped like vLLM; it never depends on the router",
			subjects: []string{"fakevllm"}, applies: underAny("fakevllm"), transitive: true,
			forbids: func(_, dep string) bool { l := local(dep); return l != "" && under(l, "router") }},
		{why: "gin appears only in router/server and fakevllm",
			subjects: []string{"router/server", "fakevllm"},
			applies:  func(rel string) bool { return rel != "router/server" && !under(rel, "fakevllm") },
			forbids:  func(_, dep string) bool { return external(dep, "github.com/gin-gonic/gin") }},
		{why: "viper appears only in router/config/load and cmd/*",
			subjects: []string{"router/config/load"},
			applies:  func(rel string) bool { return rel != "router/config/load" && !under(rel, "cmd") },
			forbids:  func(_, dep string) bool { return external(dep, "github.com/spf13/viper") }},
		{why: "client_golang appears only in router/capacity, router/server and fakevllm",
			subjects: []string{"router/capacity", "router/server", "fakevllm"},
			applies: func(rel string) bool {
				return rel != "router/capacity" && rel != "router/server" && !under(rel, "fakevllm")
			},
			forbids: func(_, dep string) bool { return external(dep, "github.com/prometheus/client_golang") }},
		{why: "router/intent depends on the standard library, router/ident and router/admission only",
			subjects: []string{"router/intent"}, applies: exact("router/intent"), transitive: true,
			forbids: func(_, dep string) bool {
				return !isStd(dep) && !slices.Contains([]string{"router/ident", "router/admission", "router/scheduler"}, local(dep))
			}},
		{why: "router/intent writes files, never the network",
			subjects: []string{"router/intent"}, applies: exact("router/intent"), transitive: true,
			forbids: func(_, dep string) bool { return dep == "net" || dep == "net/http" }},
		{why: "router/manage is the transition's client and grammar: the standard library (and its golang.org/x parts) and router/ident only",
			subjects: []string{"router/manage"}, applies: exact("router/manage"), transitive: true,
			forbids: func(_, dep string) bool {
				return !isStd(dep) && !strings.HasPrefix(dep, "golang.org/x/") && local(dep) != "router/ident"
			}},
		{why: "router/mcp reaches the router only through router/manage's request function",
			subjects: []string{"router/mcp", "router/manage"}, applies: exact("router/mcp"),
			forbids: func(_, dep string) bool {
				l := local(dep)
				return dep == "net/http" || l != "" && l != "router/manage" && l != "router/ident"
			}},
		{why: "the MCP SDK appears only in router/mcp",
			subjects: []string{"router/mcp"}, applies: func(rel string) bool { return rel != "router/mcp" },
			forbids: func(_, dep string) bool { return external(dep, "github.com/modelcontextprotocol/go-sdk") }},
		{why: "router/statuspage holds the status page's files and serves them: the standard library (and its golang.org/x parts) only; the page reads the router over HTTP, like any client",
			subjects: []string{"router/statuspage"}, applies: exact("router/statuspage"), transitive: true,
			forbids: func(_, dep string) bool { return !isStd(dep) && !strings.HasPrefix(dep, "golang.org/x/") }},
		{why: "router/watch polls an injected fingerprint and calls an injected reload: the standard library only, never the loader or the server",
			subjects: []string{"router/watch"}, applies: exact("router/watch"), transitive: true,
			forbids: func(_, dep string) bool { return !isStd(dep) || dep == "net" || dep == "net/http" }},
		{why: "qualification is a black-box client of the router and its members: the bench, the scenarios, the transition client and the router's wire models only",
			subjects: []string{"qualification"}, applies: underAny("qualification"), transitive: true,
			forbids: func(_, dep string) bool { l := local(dep); return l != "" && !slices.Contains(qualificationMay, l) }},
		{why: "only anvil-qualify imports qualification",
			subjects: []string{"qualification", "cmd/anvil-qualify"},
			applies:  func(rel string) bool { return rel != "cmd/anvil-qualify" && !under(rel, "qualification") },
			forbids:  func(_, dep string) bool { l := local(dep); return l != "" && under(l, "qualification") }},
		{why: "nothing imports a command",
			subjects: []string{"cmd/anvil-router"}, applies: func(string) bool { return true },
			forbids: func(_, dep string) bool { l := local(dep); return l != "" && under(l, "cmd") }},
		{why: "only anvil-router (serve --demo) and anvil-fakevllm hold fake members",
			subjects: []string{"cmd/anvil-router", "cmd/anvil-fakevllm"},
			applies: func(rel string) bool {
				return under(rel, "cmd") && rel != "cmd/anvil-router" && rel != "cmd/anvil-fakevllm"
			},
			forbids: func(_, dep string) bool { l := local(dep); return l != "" && under(l, "fakevllm") }},
		{why: "internal/cli is the commands' plumbing: the standard library (and its golang.org/x parts) and cobra (with its pflag) only",
			subjects: []string{"internal/cli"}, applies: exact("internal/cli"), transitive: true,
			forbids: func(_, dep string) bool {
				return !isStd(dep) && !strings.HasPrefix(dep, "golang.org/x/") &&
					!external(dep, "github.com/spf13/cobra") && !external(dep, "github.com/spf13/pflag")
			}},
		{why: "only the commands import internal/cli",
			subjects: []string{"internal/cli", "cmd/anvil-router"},
			applies:  func(rel string) bool { return !under(rel, "cmd") && rel != "internal/cli" },
			forbids:  func(_, dep string) bool { return local(dep) == "internal/cli" }},
		{why: "only anvil-router (serve --demo) imports internal/demo, the demo's fake members, config and driver",
			subjects: []string{"internal/demo", "cmd/anvil-router"},
			applies:  func(rel string) bool { return rel != "cmd/anvil-router" },
			forbids:  func(_, dep string) bool { return local(dep) == "internal/demo" }},
		{why: "go-systemd appears only in router/listen",
			subjects: []string{"router/listen"}, applies: func(rel string) bool { return rel != "router/listen" },
			forbids: func(_, dep string) bool { return external(dep, "github.com/coreos/go-systemd") }},
		{why: "router/listen opens sockets: the standard library and go-systemd only",
			subjects: []string{"router/listen"}, applies: exact("router/listen"), transitive: true,
			forbids: func(_, dep string) bool {
				return !isStd(dep) && !strings.HasPrefix(dep, "golang.org/x/") && !external(dep, "github.com/coreos/go-systemd")
			}},
		{why: "only anvil-router's command opens the listeners of router/listen",
			subjects: []string{"router/listen", "cmd/anvil-router"},
			applies:  func(rel string) bool { return rel != "router/listen" && rel != "cmd/anvil-router" },
			forbids:  func(_, dep string) bool { return local(dep) == "router/listen" }},
		{why: "internal/enginepage renders the engine model as each engine prints it: the standard library, client_model (with its protobuf) and engine only",
			subjects: []string{"internal/enginepage"}, applies: exact("internal/enginepage"), transitive: true,
			forbids: func(_, dep string) bool {
				return !isStd(dep) && local(dep) != "engine" && !external(dep, "github.com/prometheus/client_model") &&
					!external(dep, "google.golang.org/protobuf")
			}},
	}
}

// graph is the module's build graph: each module package's direct imports and every package in its
// transitive closure, plus the parsed and type-checked non-test files of each module package.
type graph struct {
	imports map[string][]string // rel -> import paths
	deps    map[string][]string // rel -> every import path in the closure
	pkgs    map[string]*packages.Package
	fset    *token.FileSet
}

// loadGraph loads the module's import graph, with overlay (absolute path -> contents) standing in for
// files on disk, and parses and type-checks the module packages matching typed (none when empty).
// Type-checking one package needs only its dependencies' export data, so a planted file in one
// package is checked without rebuilding everything above it.
func loadGraph(overlay map[string][]byte, typed ...string) (*graph, error) {
	root, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	g := &graph{imports: map[string][]string{}, deps: map[string][]string{}, pkgs: map[string]*packages.Package{},
		fset: token.NewFileSet()}
	cfg := &packages.Config{Dir: root, Overlay: overlay, Fset: g.fset,
		Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps}
	all, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	for _, p := range all {
		rel := local(p.PkgPath)
		if rel == "" {
			continue
		}
		for path := range p.Imports {
			g.imports[rel] = append(g.imports[rel], path)
		}
		sort.Strings(g.imports[rel])
		seen := map[string]bool{}
		var walk func(*packages.Package)
		walk = func(q *packages.Package) {
			for path, dep := range q.Imports {
				if !seen[path] {
					seen[path] = true
					walk(dep)
				}
			}
		}
		walk(p)
		for path := range seen {
			g.deps[rel] = append(g.deps[rel], path)
		}
		sort.Strings(g.deps[rel])
	}
	if len(typed) == 0 {
		return g, nil
	}
	cfg.Mode = packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo
	loaded, err := packages.Load(cfg, typed...)
	if err != nil {
		return nil, err
	}
	for _, p := range loaded {
		if len(p.Errors) > 0 {
			return nil, fmt.Errorf("loading %s: %v", p.PkgPath, p.Errors[0])
		}
		if rel := local(p.PkgPath); rel != "" {
			g.pkgs[rel] = p
		}
	}
	if len(g.pkgs) == 0 {
		return nil, fmt.Errorf("no packages found: the policy must see the module")
	}
	return g, nil
}

// codeRule reports whether a planted violation is caught by the code rules (which need types), not
// by the import rules (which need only the graph).
func codeRule(want string) bool {
	for _, s := range []string{"dot-import", "goroutine", "uses ", "prints", "writes package-level", "no initializer",
		"speaks the transition endpoint"} {
		if strings.Contains(want, s) {
			return true
		}
	}
	return false
}

// violations returns every breach of the house rules in g, one line each, sorted.
func (g *graph) violations() []string {
	var out []string
	rels := make([]string, 0, len(g.imports))
	for rel := range g.imports {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	for _, rel := range rels {
		for _, r := range rules() {
			if !r.applies(rel) {
				continue
			}
			edges := g.imports[rel]
			if r.transitive {
				edges = g.deps[rel]
			}
			for _, dep := range edges {
				if r.forbids(rel, dep) {
					out = append(out, fmt.Sprintf("%s depends on %s: %s", rel, dep, r.why))
				}
			}
		}
		if g.pkgs[rel] != nil {
			out = append(out, g.codeViolations(rel)...)
		}
	}
	return out
}

// forbiddenUses are the objects that pure and quiet code must never use: clocks, sleeps and timers,
// global random sources, printing, and deadlines (a deadline is a clock read).
var forbiddenUses = map[string][]string{
	"time": {"Now", "Since", "Until", "Sleep", "After", "Tick", "NewTimer", "NewTicker", "AfterFunc"},
	"math/rand/v2": {"Int", "IntN", "Int32", "Int32N", "Int64", "Int64N", "Uint32", "Uint64", "Uint64N", "UintN",
		"Float32", "Float64", "Perm", "Shuffle", "N", "ExpFloat64", "NormFloat64"},
	"fmt":     {"Print", "Printf", "Println"},
	"context": {"WithDeadline", "WithDeadlineCause", "WithTimeout", "WithTimeoutCause"},
}

// transitionPath is the admin transition endpoint; only router/manage, its one client, names it
// (the server registers it as a route group and a relative path).
const transitionPath = "/admin/v1/transition"

// codeViolations checks one package's code: dot-imports everywhere; package-level mutable state
// everywhere; the transition endpoint named only by router/manage; and in pure and quiet packages
// goroutines, clocks, global random, printing and deadlines.
func (g *graph) codeViolations(rel string) []string {
	p := g.pkgs[rel]
	var out []string
	report := func(pos token.Pos, format string, args ...any) {
		out = append(out, fmt.Sprintf("%s: %s: %s", rel, g.fset.Position(pos), fmt.Sprintf(format, args...)))
	}
	restricted := slices.Contains(pure, rel) || slices.Contains(quiet, rel)
	for _, f := range p.Syntax {
		for _, imp := range f.Imports {
			if imp.Name != nil && imp.Name.Name == "." {
				report(imp.Pos(), "dot-import of %s", imp.Path.Value)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING && rel != "router/manage" && strings.Contains(n.Value, transitionPath) {
					report(n.Pos(), "speaks the transition endpoint outside router/manage")
				}
			case *ast.GoStmt:
				if restricted {
					report(n.Pos(), "starts a goroutine")
				}
			case *ast.Ident:
				if restricted {
					g.checkUse(p, n, report)
				}
			case *ast.AssignStmt:
				if n.Tok != token.DEFINE {
					for _, lhs := range n.Lhs {
						g.checkWrite(p, lhs, report)
					}
				}
			case *ast.IncDecStmt:
				g.checkWrite(p, n.X, report)
			case *ast.UnaryExpr:
				if n.Op == token.AND {
					g.checkWrite(p, n.X, report)
				}
			}
			return true
		})
	}
	uninitialized(p, report)
	return out
}

func (g *graph) checkUse(p *packages.Package, id *ast.Ident, report func(token.Pos, string, ...any)) {
	obj := p.TypesInfo.Uses[id]
	switch o := obj.(type) {
	case *types.Builtin:
		if o.Name() == "print" || o.Name() == "println" {
			report(id.Pos(), "prints with %s", o.Name())
		}
	case *types.Func, *types.Var:
		if obj.Pkg() == nil || obj.Parent() != obj.Pkg().Scope() {
			return // a method, field or local
		}
		path := obj.Pkg().Path()
		if slices.Contains(forbiddenUses[path], obj.Name()) || path == "math/rand" || path == "log" || path == "log/slog" {
			report(id.Pos(), "uses %s.%s", path, obj.Name())
		}
	}
}

// checkWrite reports a write to (or the address of) a package-level variable, reached directly or
// through fields, indexes and dereferences: x = v, x.f = v, m[k]++, *p = v, &x.
func (g *graph) checkWrite(p *packages.Package, lhs ast.Expr, report func(token.Pos, string, ...any)) {
	root := lhs
	for {
		switch e := root.(type) {
		case *ast.ParenExpr:
			root = e.X
			continue
		case *ast.IndexExpr:
			root = e.X
			continue
		case *ast.IndexListExpr:
			root = e.X
			continue
		case *ast.StarExpr:
			root = e.X
			continue
		case *ast.SelectorExpr:
			if id, ok := e.X.(*ast.Ident); ok {
				if _, isPkg := p.TypesInfo.Uses[id].(*types.PkgName); isPkg {
					root = e.Sel // another package's variable
					break
				}
			}
			root = e.X
			continue
		}
		break
	}
	id, ok := root.(*ast.Ident)
	if !ok {
		return
	}
	v, ok := p.TypesInfo.Uses[id].(*types.Var)
	if !ok || v.IsField() || v.Pkg() == nil || v.Parent() != v.Pkg().Scope() {
		return
	}
	report(lhs.Pos(), "writes package-level variable %s.%s (mutable state)", v.Pkg().Name(), v.Name())
}

// uninitialized reports package-level variables declared without a value (they can only exist to be
// assigned later), except embedded files.
func uninitialized(p *packages.Package, report func(token.Pos, string, ...any)) {
	for _, f := range p.Syntax {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR || hasEmbed(gd.Doc) {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if len(vs.Values) > 0 || hasEmbed(vs.Doc) {
					continue
				}
				for _, n := range vs.Names {
					if n.Name != "_" {
						report(n.Pos(), "package-level variable %s has no initializer (mutable state)", n.Name)
					}
				}
			}
		}
	}
}

// hasEmbed reads the raw comment lines: CommentGroup.Text drops //go: directives.
func hasEmbed(g *ast.CommentGroup) bool {
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

// cleanGraph is the module as it is on disk, loaded once for the tests that read it.
var cleanGraph = sync.OnceValues(func() (*graph, error) { return loadGraph(nil, "./...") })

func clean(t *testing.T) *graph {
	t.Helper()
	g, err := cleanGraph()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestHouseRules(t *testing.T) {
	for _, v := range clean(t).violations() {
		t.Error(v)
	}
}

// TestPolicySubjectsExist: a rule about a package that does not exist would pass vacuously, so it
// fails instead (add the rule when the package lands).
func TestPolicySubjectsExist(t *testing.T) {
	g := clean(t)
	for _, r := range rules() {
		for _, s := range r.subjects {
			assert.Truef(t, g.pkgs[s] != nil, "rule %q names %s, which does not exist", r.why, s)
		}
	}
	for _, s := range slices.Concat(pure, quiet, netFree) {
		assert.Truef(t, g.pkgs[s] != nil, "%s is listed in the policy but does not exist", s)
	}
}

// TestPolicyCatchesPlantedViolations plants each kind of violation, one at a time, as an extra file
// in an overlay copy of a real package, and requires the policy to report it; the clean tree passes.
func TestPolicyCatchesPlantedViolations(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the module once per planted violation")
	}
	plants := []struct {
		name, pkg, code, want string
	}{
		{"transitive net/http under the simulator", "router/decisionlog",
			`import "net/http"; var _ = http.MethodGet`, "sim depends on net/http"},
		{"transitive viper under routing", "router/decisionlog",
			`import "github.com/spf13/viper"; var _ = viper.New`, "router/routing depends on github.com/spf13/viper"},
		{"non-stdlib in a pure package", "router/scheduler",
			`import "github.com/stretchr/testify/assert"; var _ = assert.True`, "router/scheduler depends on github.com/stretchr/testify"},
		{"dot-import", "router/routing", `import . "strings"; var _ = ToUpper`, "dot-import"},
		{"goroutine in a pure core", "router/scheduler", `func planted() { go func() {}() }`, "starts a goroutine"},
		{"goroutine in the simulator", "sim", `func planted() { go func() {}() }`, "starts a goroutine"},
		{"clock in a pure core", "engine", `import "time"; func planted() time.Time { return time.Now() }`, "uses time.Now"},
		{"aliased clock", "sim/event", `import clock "time"; func planted() { clock.Sleep(1) }`, "uses time.Sleep"},
		{"printing in a pure core", "router/ident", `import "fmt"; func planted() { fmt.Println("x") }`, "uses fmt.Println"},
		{"builtin print", "router/scheduler", `func planted() { println("x") }`, "prints with println"},
		{"deadline in a pure core", "router/scheduler",
			`import "context"; func planted() { _, c := context.WithTimeout(context.Background(), 1); c() }`, "uses context.WithTimeout"},
		{"global random", "router/admission", `import "math/rand/v2"; func planted() int { return rand.IntN(3) }`, "uses math/rand/v2.IntN"},
		{"package-level counter++", "router/relay", `var planted = 0; func bump() { planted++ }`, "writes package-level variable relay.planted"},
		{"package-level map write", "router/relay", `var planted = map[string]int{}; func bump() { planted["k"]++ }`, "writes package-level variable relay.planted"},
		{"package-level field write", "router/relay", `var planted = struct{ n int }{}; func bump() { planted.n = 2 }`, "writes package-level variable relay.planted"},
		{"write through a pointer", "router/relay", `var planted = new(int); func bump() { *planted = 2 }`, "writes package-level variable relay.planted"},
		{"address taken", "router/relay", `var planted = 0; func bump() *int { return &planted }`, "writes package-level variable relay.planted"},
		{"another package's variable", "router/relay",
			`import "github.com/anvil-llm/anvil/router/decisionlog"; func bump() { decisionlog.ErrConfig = nil }`,
			"writes package-level variable decisionlog.ErrConfig"},
		{"uninitialized package variable", "router/relay", `var planted int`, "planted has no initializer"},
		{"router depends on the simulator", "router/relay", `import "github.com/anvil-llm/anvil/sim"; var _ = sim.Run`, "router/relay depends on github.com/anvil-llm/anvil/sim"},
		{"the walk links OpenTelemetry", "router/routing",
			`import "go.opentelemetry.io/otel/trace"; var _ = trace.SpanKindServer`, "never link OpenTelemetry"},
		{"gin outside the server", "router/routing", `import "github.com/gin-gonic/gin"; var _ = gin.New`, "gin appears only"},
		{"client_golang outside its three homes", "router/decisionlog",
			`import "github.com/prometheus/client_golang/prometheus"; var _ = prometheus.NewRegistry`, "client_golang appears only"},
		{"bench depends on the relay", "bench", `import "github.com/anvil-llm/anvil/router/relay"; var _ = relay.New`, "bench is a black-box"},
		{"bench depends on the simulator", "bench", `import "github.com/anvil-llm/anvil/sim"; var _ = sim.Run`, "bench is a black-box"},
		{"intent depends on routing", "router/intent",
			`import "github.com/anvil-llm/anvil/router/routing"; var _ = routing.New`, "router/intent depends on github.com/anvil-llm/anvil/router/routing"},
		{"intent opens a socket", "router/intent", `import "net"; var _ = net.Dial`, "router/intent writes files, never the network"},
		{"manage depends on admission", "router/manage",
			`import "github.com/anvil-llm/anvil/router/admission"; var _ = admission.New`, "router/manage depends on github.com/anvil-llm/anvil/router/admission"},
		{"mcp speaks HTTP itself", "router/mcp", `import "net/http"; var _ = http.MethodPost`, "router/mcp depends on net/http"},
		{"mcp bypasses manage", "router/mcp",
			`import "github.com/anvil-llm/anvil/router/admission"; var _ = admission.New`, "router/mcp reaches the router only through"},
		{"MCP SDK outside router/mcp", "router/manage",
			`import sdk "github.com/modelcontextprotocol/go-sdk/mcp"; var _ = sdk.NewServer`, "the MCP SDK appears only in router/mcp"},
		{"transition path outside manage", "router/mcp", `var _ = "http://h` + transitionPath + `"`, "speaks the transition endpoint outside router/manage"},
		{"status page reaches into the router", "router/statuspage",
			`import "github.com/anvil-llm/anvil/router/capacity"; var _ = capacity.Plan`, "router/statuspage holds the status page's files"},
		{"watch reaches into the loader", "router/watch",
			`import "github.com/anvil-llm/anvil/router/config/load"; var _ = load.NewSource`, "router/watch polls an injected fingerprint"},
		{"qualification depends on admission", "qualification",
			`import "github.com/anvil-llm/anvil/router/admission"; var _ = admission.New`, "qualification is a black-box client"},
		{"the simulator depends on qualification", "sim/report",
			`import "github.com/anvil-llm/anvil/qualification"; var _ = qualification.Parse`, "only anvil-qualify imports qualification"},
		{"go-systemd outside router/listen", "router/server",
			`import "github.com/coreos/go-systemd/v22/activation"; var _ = activation.Files`, "go-systemd appears only in router/listen"},
		{"the server opens the activated listeners itself", "router/server",
			`import "github.com/anvil-llm/anvil/router/listen"; var _ = listen.Open`, "only anvil-router's command opens the listeners"},
		{"listen depends on the config", "router/listen",
			`import "github.com/anvil-llm/anvil/router/config"; var _ = config.EnvListen`, "router/listen opens sockets"},
		{"fakevllm depends on the router", "fakevllm",
			`import "github.com/anvil-llm/anvil/router/ident"; var _ = ident.ValidID`, "fakevllm is scraped like vLLM"},
		{"the commands' plumbing depends on the router", "internal/cli",
			`import "github.com/anvil-llm/anvil/router/ident"; var _ = ident.ValidID`, "internal/cli depends on github.com/anvil-llm/anvil/router/ident"},
		{"a package imports the commands' plumbing", "bench",
			`import "github.com/anvil-llm/anvil/internal/cli"; var _ = cli.Code`, "only the commands import internal/cli"},
		{"another command holds the demo", "cmd/anvil-sim",
			`import "github.com/anvil-llm/anvil/internal/demo"; var _ = demo.Token`, "only anvil-router (serve --demo) imports internal/demo"},
		{"a pure core opens files", "router/health", `import "os"; var _ = os.Getpid`, "pure packages do no I/O"},
		{"admission depends on the decision log", "router/admission",
			`import "github.com/anvil-llm/anvil/router/decisionlog"; var _ = decisionlog.ErrConfig`,
			"admission depends on the standard library, router/ident and router/scheduler only"},
		{"admission opens files", "router/admission", `import "os"; var _ = os.Getpid`, "admission does no I/O and no logging"},
		{"the simulator depends on the relay", "sim/report",
			`import "github.com/anvil-llm/anvil/router/relay"; var _ = relay.New`, "the simulator never touches the server, the relay or gin"},
		{"viper outside the loader and the commands", "bench", `import "github.com/spf13/viper"; var _ = viper.New`,
			"viper appears only in router/config/load and cmd/*"},
		{"a package imports a command", "bench", `import _ "github.com/anvil-llm/anvil/cmd/anvil-router"`, "nothing imports a command"},
		{"another command holds fake members", "cmd/anvil-sim",
			`import "github.com/anvil-llm/anvil/fakevllm"; var _ = fakevllm.NewServer`,
			"only anvil-router (serve --demo) and anvil-fakevllm hold fake members"},
		{"the simulator depends on the fake server", "sim/report",
			`import "github.com/anvil-llm/anvil/fakevllm"; var _ = fakevllm.NewServer`, "the simulator uses the engine model, never the fake HTTP server"},
		{"the engine model depends on the router", "engine/profile",
			`import "github.com/anvil-llm/anvil/router/ident"; var _ = ident.ValidID`, "the engine model is the leaf under fakevllm, sim and scenarios"},
		{"non-stdlib in the JSON scanner", "internal/jsonscan",
			`import "github.com/stretchr/testify/assert"; var _ = assert.True`, "internal/jsonscan depends on github.com/stretchr/testify"},
		{"I/O in the SSE reader", "internal/sse", `import "os"; var _ = os.Stdin`, "internal/sse depends on os: pure packages do no I/O"},
		{"clock in the WAV writer", "internal/wav", `import "time"; func planted() time.Time { return time.Now() }`, "uses time.Now"},
		{"I/O in the collector's plan", "internal/gctune", `import "os"; var _ = os.ReadFile`, "internal/gctune depends on os: pure packages do no I/O"},
		{"goroutine in the walk", "router/routing", `func planted() { go func() {}() }`, "starts a goroutine"},
		{"printing in the request parser", "router/request", `import "fmt"; func planted() { fmt.Println("x") }`, "uses fmt.Println"},
		{"net/http in the request parser", "router/request", `import "net/http"; var _ = http.MethodPost`, "router/request depends on net/http"},
		{"the engine pages read the router's adapters", "internal/enginepage",
			`import "github.com/anvil-llm/anvil/router/pressure/adapter"; var _ = adapter.For`,
			"internal/enginepage depends on github.com/anvil-llm/anvil/router/pressure/adapter"},
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// Every import rule must have a plant that it reports: a rule nothing plants could pass vacuously.
	var mu sync.Mutex
	caught := map[string]bool{} // the whys of the import rules that reported a plant
	matched := 0
	t.Cleanup(func() { // after every parallel subtest
		if matched < len(plants) || t.Failed() {
			return // a -run subset, or already failing
		}
		for _, r := range rules() {
			if !caught[r.why] {
				t.Errorf("no planted violation is reported by the rule %q: plant one", r.why)
			}
		}
	})
	for _, pl := range plants {
		t.Run(pl.name, func(t *testing.T) {
			t.Parallel() // each load is mostly a go list process
			dir := filepath.Join(root, filepath.FromSlash(pl.pkg))
			name := filepath.Base(pl.pkg)
			if pl.pkg == "sim/event" {
				name = "event"
			}
			src := fmt.Sprintf("package %s\n\n%s\n", packageName(t, dir, name), pl.code)
			var typed []string
			if codeRule(pl.want) {
				typed = []string{"./" + pl.pkg} // only the planted package is type-checked
			}
			g, err := loadGraph(map[string][]byte{filepath.Join(dir, "zz_planted.go"): []byte(src)}, typed...)
			if err != nil {
				t.Fatal(err)
			}
			vs := g.violations()
			for _, v := range vs {
				if strings.Contains(v, pl.want) {
					mu.Lock()
					defer mu.Unlock()
					matched++
					for _, r := range rules() {
						if strings.HasSuffix(v, ": "+r.why) {
							caught[r.why] = true
						}
					}
					return
				}
			}
			t.Errorf("the policy missed %q; it reported %d violations: %v", pl.want, len(vs), vs)
		})
	}
}

// packageName reads the package clause of a directory's first Go file.
func packageName(t *testing.T, dir, fallback string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(b), "\n") {
				if name, ok := strings.CutPrefix(line, "package "); ok {
					return strings.TrimSpace(name)
				}
			}
		}
	}
	return fallback
}

func TestEveryPackageHasADocComment(t *testing.T) {
	for rel, p := range clean(t).pkgs {
		if strings.HasPrefix(rel, "cmd/") || rel == "." {
			continue
		}
		documented := false
		for _, f := range p.Syntax {
			if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
				documented = true
			}
		}
		assert.Truef(t, documented, "package %s has no doc comment", rel)
	}
}

// TestDocGuidesExist: router, sim and qualification carry a doc.go reading guide. A listed directory
// that does not exist fails: remove it from the list until the package lands.
func TestDocGuidesExist(t *testing.T) {
	for _, dir := range []string{"router", "sim", "qualification"} {
		if _, err := os.Stat(filepath.Join(dir, "doc.go")); err != nil {
			t.Errorf("%s has no doc.go reading guide", dir)
		}
	}
}
