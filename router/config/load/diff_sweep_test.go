package load

import (
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
)

// sweepEnv supplies the API keys testdata/full.yaml names, and one more for a renamed variable.
func sweepEnv() map[string]string {
	return map[string]string{"GPU_BOX_KEY": apiKey, "HOSTED_API_KEY": apiKey + "-hosted", "OTHER_KEY": apiKey + "-other",
		"TEAM_A_TOKEN": labelTok, "BATCH_TOKEN": labelTok2, "OTHER_CALLER_TOKEN": labelTok2 + "-other"}
}

// sweepTokenFile answers any caller-token file with two tokens and any admin-token file with one, so
// a renamed token file still reads.
func sweepTokenFile(name string) ([]byte, error) {
	switch {
	case strings.Contains(name, "admin"):
		return []byte(adminTok + "\n"), nil
	case strings.Contains(name, "observer"):
		return []byte(observerTok + "\n"), nil
	case strings.Contains(name, "team"):
		return []byte(labelTok + "\n"), nil
	}
	return []byte(callerTok + "\n" + callerTok2 + "\n"), nil
}

// leaf is one scalar of a Document, found by walking it by reflection.
type leaf struct {
	schema string        // the schema key, list entries unnamed: tiers.members.max_concurrency
	path   string        // the path a Change names: tiers.gpu-box.members.vllm-0.max_concurrency
	entry  string        // for an ID leaf, the path of its entry (tiers.gpu-box), else ""
	v      reflect.Value // the settable pointer (or string, inside caller_tokens)
}

func tagOf(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
	return name
}

// leaves walks v (a Document or one of its sections) in schema order.
func leaves(v reflect.Value, schema, path string) []leaf {
	var out []leaf
	join := func(a, b string) string {
		if a == "" {
			return b
		}
		return a + "." + b
	}
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		key := tagOf(f)
		s, p := join(schema, key), join(path, key)
		switch {
		case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct:
			if !fv.IsNil() {
				out = append(out, leaves(fv.Elem(), s, p)...)
			}
		case fv.Kind() == reflect.Pointer:
			if !fv.IsNil() {
				l := leaf{schema: s, path: p, v: fv}
				if key == "id" || key == "label" {
					l.path, l.entry = path, path
				}
				out = append(out, l)
			}
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
			for j := range fv.Len() {
				out = append(out, leaf{schema: s, path: p, v: fv.Index(j)})
			}
		case fv.Kind() == reflect.Slice:
			for j := range fv.Len() {
				e := fv.Index(j)
				id := e.FieldByName("ID")
				if !id.IsValid() {
					id = e.FieldByName("Label") // auth.callers are keyed by label
				}
				out = append(out, leaves(e, s, p+"."+id.Elem().String())...)
			}
		}
	}
	return out
}

// schemaKeys lists every scalar key of the schema, by reflection on config.Document.
func schemaKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		key := tagOf(f)
		if prefix != "" {
			key = prefix + "." + key
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			out = append(out, schemaKeys(ft, key)...)
		} else {
			out = append(out, key)
		}
	}
	return out
}

var lastPort = regexp.MustCompile(`:(\d+)(/|$)`)

// bumpPort moves an endpoint's port by 100, keeping it on its host and unique in the file.
func bumpPort(s string) string {
	m := lastPort.FindAllStringSubmatchIndex(s, -1)
	if m == nil {
		return s
	}
	last := m[len(m)-1]
	n, _ := strconv.Atoi(s[last[2]:last[3]])
	return s[:last[2]] + strconv.Itoa(n+100) + s[last[3]:]
}

// mutations are the candidate edits of one leaf, each applied to a fresh Document; the first one
// that still validates is used. The composite ones (a tier's ID, kind or host) edit what must move
// with them, so the file stays valid.
func mutations(l leaf) []func(doc *config.Document) {
	key := l.schema[strings.LastIndex(l.schema, ".")+1:]
	set := func(v any) func(*config.Document) {
		return func(*config.Document) { l.v.Elem().Set(reflect.ValueOf(v)) }
	}
	if l.v.Kind() == reflect.String { // an element of caller_tokens
		return []func(*config.Document){func(*config.Document) { l.v.SetString(l.v.String() + "x") }}
	}
	switch cur := l.v.Elem().Interface().(type) {
	case int64:
		return []func(*config.Document){set(cur + 1), set(cur - 1), set(cur * 2), set(cur / 2)}
	case time.Duration:
		return []func(*config.Document){set(cur * 2), set(cur / 2), set(cur + time.Second), set(cur - 100*time.Millisecond)}
	case float64:
		return []func(*config.Document){set(cur / 2)}
	case bool:
		return []func(*config.Document){set(!cur)}
	case string:
		return stringMutations(l, key, cur, set)
	}
	return nil
}

func stringMutations(l leaf, key, cur string, set func(any) func(*config.Document)) []func(*config.Document) {
	one := func(f func(*config.Document)) []func(*config.Document) { return []func(*config.Document){f} }
	switch l.schema {
	case "listen":
		return one(set("[::1]:8444"))
	case "metrics.listen":
		return one(set("[::1]:9465"))
	case "log.format":
		return one(set(map[string]string{"json": "text", "text": "json"}[cur]))
	case "log.level":
		return one(set(map[string]string{"debug": "info"}[cur] + map[string]string{"info": "warn", "warn": "error", "error": "debug"}[cur]))
	case "aliases.tier":
		return []func(*config.Document){set("rr-box"), set("hosted")}
	case "tiers.id":
		return one(func(doc *config.Document) {
			for i := range doc.Aliases {
				if *doc.Aliases[i].Tier == cur {
					doc.Aliases[i].Tier = ptr(cur + "-x")
				}
			}
			l.v.Elem().SetString(cur + "-x")
		})
	case "tiers.kind":
		if cur != "replica" {
			return nil
		}
		return one(func(doc *config.Document) { toDirect(doc, l) })
	case "tiers.host":
		return one(func(doc *config.Document) { moveHost(doc, l) })
	case "tiers.replica_strategy":
		return one(set(map[string]string{"capacity": "round_robin", "round_robin": "capacity"}[cur]))
	case "tiers.engine":
		return one(set(map[string]string{"sglang": "tgi", "vllm": "sglang"}[cur]))
	case "tiers.api_key_env":
		return one(set("OTHER_KEY"))
	case "auth.callers.token_env":
		return one(set("OTHER_CALLER_TOKEN"))
	case "tiers.endpoint", "tiers.members.endpoint", "tracing.endpoint":
		return one(set(bumpPort(cur)))
	case "tracing.protocol":
		return one(set(map[string]string{"grpc": "http/protobuf", "http/protobuf": "grpc"}[cur]))
	case "tracing.sampler":
		return one(set(map[string]string{"always_on": "always_off"}[cur] + map[string]string{"always_off": "always_on"}[cur] +
			map[string]string{"parentbased_traceidratio": "traceidratio", "traceidratio": "parentbased_traceidratio"}[cur]))
	case "tracing.service_name":
		return one(set(cur + "-x"))
	case "tracing.resource_attributes":
		return one(set(cur + ",extra=1"))
	}
	switch key {
	case "cert_file", "key_file", "jsonl_path", "intent_file", "caller_tokens_file", "admin_token_file",
		"observer_tokens_file", "token_file":
		return one(set(cur + ".new"))
	case "admin_token", "id", "label", "token":
		return one(set(cur + "x"))
	case "served_model":
		return one(set(cur + "-x"))
	case "provenance":
		return one(set(cur + " x"))
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// toDirect turns the replica tier whose kind leaf is being swept into a direct tier on its first
// member's endpoint.
func toDirect(doc *config.Document, l leaf) {
	for i := range doc.Tiers {
		t := &doc.Tiers[i]
		if t.Kind != l.v.Interface().(*string) {
			continue
		}
		t.Kind, t.Endpoint = ptr("direct"), t.Members[0].Endpoint
		t.Host, t.Provenance, t.ReplicaStrategy, t.Engine, t.PassiveHealth, t.Members = nil, nil, nil, nil, nil, nil
	}
}

// moveHost puts a replica tier and its members on 127.0.0.1, keeping their ports.
func moveHost(doc *config.Document, l leaf) {
	l.v.Elem().SetString("127.0.0.1")
	for i := range doc.Tiers {
		t := &doc.Tiers[i]
		if t.Host != l.v.Interface().(*string) {
			continue
		}
		for j := range t.Members {
			u, err := url.Parse(*t.Members[j].Endpoint)
			if err != nil {
				continue
			}
			u.Host = "127.0.0.1:" + u.Port()
			t.Members[j].Endpoint = ptr(u.String())
		}
	}
}

// shownKeys are the string settings whose values a Change may show (enums and IDs).
var shownKeys = []string{"log.format", "log.level", "aliases.tier", "tiers.kind", "tiers.replica_strategy", "tiers.engine",
	"tracing.protocol", "tracing.service_name", "tracing.sampler"}

// TestDiffSweepsEveryLeaf changes each scalar of testdata/full.yaml (in its inline-token and its
// token-file form) to another valid value and requires Diff to name it, RestartRequired to refuse it
// exactly when the key is in RestartRequiredKeys, and no opaque value to be shown. It also requires
// every key of the schema to have been swept, so a key added to config.Document without a place in
// Diff fails here.
func TestDiffSweepsEveryLeaf(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "full.yaml"))
	require.NoError(t, err)
	src := config.Sources{LookupEnv: envMap(sweepEnv()), ReadFile: sweepTokenFile}
	forms := []struct {
		name string
		edit func(*config.Document)
	}{
		{"inline tokens", func(*config.Document) {}},
		{"token files", func(doc *config.Document) {
			doc.Auth.CallerTokens, doc.Auth.AdminToken = nil, nil
			doc.Auth.CallerTokensFile, doc.Auth.AdminTokenFile = ptr("/run/anvil/caller-tokens"), ptr("/run/anvil/admin-token")
			doc.Auth.ObserverTokens, doc.Auth.ObserverTokensFile = nil, ptr("/run/anvil/observer-tokens")
			doc.Auth.Callers[0] = config.CallerDoc{Label: doc.Auth.Callers[0].Label, TokenFile: ptr("/run/anvil/team-a")}
			doc.Auth.Callers[1] = config.CallerDoc{Label: doc.Auth.Callers[1].Label, Token: ptr(labelTok2)}
		}},
	}
	fresh := func(t *testing.T, edit func(*config.Document)) config.Document {
		require.NoError(t, gate(data))
		doc, err := decode(data)
		require.NoError(t, err)
		edit(&doc)
		return doc
	}
	covered := map[string]bool{}
	restartKeys := config.RestartRequiredKeys()
	for _, form := range forms {
		t.Run(form.name, func(t *testing.T) {
			base, err := config.Build(fresh(t, form.edit), src)
			require.NoError(t, err)
			require.Empty(t, config.Diff(base, base))
			n := len(leaves(reflect.ValueOf(fresh(t, form.edit)), "", ""))
			require.Greater(t, n, 60, "the sweep must see the whole file")
			for i := range n {
				sweepLeaf(t, fresh, form.edit, i, base, src, restartKeys, covered)
			}
		})
	}
	var missing []string
	for _, k := range schemaKeys(reflect.TypeFor[config.Document](), "") {
		if !covered[k] {
			missing = append(missing, k)
		}
	}
	assert.Empty(t, missing, "schema keys no valid change of full.yaml reached")
}

func sweepLeaf(t *testing.T, fresh func(*testing.T, func(*config.Document)) config.Document, edit func(*config.Document),
	i int, base config.Config, src config.Sources, restartKeys []string, covered map[string]bool) {
	t.Helper()
	// Each candidate edit runs on a fresh Document: the closures hold the leaf they were built on.
	for k := 0; ; k++ {
		doc := fresh(t, edit)
		l := leaves(reflect.ValueOf(&doc).Elem(), "", "")[i]
		ms := mutations(l)
		if k >= len(ms) {
			return
		}
		ms[k](&doc)
		next, err := config.Build(doc, src)
		if err != nil {
			continue
		}
		changes := config.Diff(base, next)
		named := slices.IndexFunc(changes, func(c config.Change) bool { return c.Path == l.path })
		if !assert.GreaterOrEqualf(t, named, 0, "changing %s (leaf %d) gives no change line naming it: %v", l.path, i, changes) {
			return
		}
		covered[l.schema] = true
		c := changes[named]
		if l.v.Kind() == reflect.Pointer && l.v.Elem().Kind() == reflect.String && l.entry == "" && !slices.Contains(shownKeys, l.schema) {
			assert.Emptyf(t, c.From+c.To, "%s is opaque but its change shows values", l.path)
		}
		restart := config.RestartRequired(base, next)
		wantRestart := slices.ContainsFunc(changes, func(c config.Change) bool { return slices.Contains(restartKeys, c.Path) })
		assert.Equalf(t, wantRestart, restart != nil, "RestartRequired for %s: %v", l.path, restart)
		assert.Equalf(t, sortedPaths(changes), sortedPaths(config.Diff(next, base)), "Diff is not symmetric for %s", l.path)
		return
	}
}

// sortedPaths is the multiset of paths a change list names.
func sortedPaths(cs []config.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path
	}
	sort.Strings(out)
	return out
}
