package yamlschema

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type leaves struct {
	S  *string        `yaml:"s"`
	B  bool           `yaml:"b"`
	I  int            `yaml:"i"`
	I6 *int64         `yaml:"i64"`
	U  uint64         `yaml:"u"`
	F  float64        `yaml:"f"`
	D  *time.Duration `yaml:"d"`
	C  complex128     `yaml:"c"`
}

type item struct {
	ID   string   `yaml:"id"`
	Tags []string `yaml:"tags"`
}

type schema struct {
	Name   string    `yaml:"name,omitempty"`
	Leaves *leaves   `yaml:"leaves"`
	Items  []item    `yaml:"items"`
	Grid   [][]int64 `yaml:"grid"`
	Auth   *struct {
		Token string `yaml:"token"`
	} `yaml:"auth"`
	Other string `mapstructure:"other_name" yaml:"other"`
}

var schemaType = reflect.TypeFor[schema]()

// check runs Document then Check with the yaml tag, quiet under auth.
func check(t *testing.T, doc string, o Options) *Problem {
	t.Helper()
	top, p := Document([]byte(doc), 1<<16)
	if p != nil {
		return p
	}
	return Check(top, schemaType, o)
}

func (p *Problem) String() string {
	if p == nil {
		return "<nil>"
	}
	return p.Path + ": " + p.Msg
}

func TestCheck(t *testing.T) {
	o := Options{Tag: "yaml", Quiet: func(path string) bool { return path == "auth" }}
	cases := []struct{ name, doc, want string }{
		{"valid", "name: n\nleaves: {s: x, b: true, i: -3, i64: 1_000, u: 18446744073709551615, f: .5, d: 1m30s}\n" +
			"items:\n  - id: a\n    tags: [x, y]\n  - {id: b}\ngrid: [[1, 2], [], [3]]\nauth: {token: t}\nother: o\n", "<nil>"},
		{"empty mapping", "{}\n", "<nil>"},
		{"nulls through pointers", "leaves: {s: null}\n", "leaves.s: must be a string"},
		{"anchored top", "&a\nname: n\n", ": yaml anchors and aliases are not supported"},
		{"anchored value", "name: &a n\n", "name: yaml anchors and aliases are not supported"},
		{"alias value", "items:\n  - &i {id: a}\n  - *i\n", "items[0]: yaml anchors and aliases are not supported"},
		{"undefined alias", "name: x\nother: *a\n", "invalid YAML syntax"},
		{"anchored key", "&k name: n\n", "document: yaml anchors and aliases are not supported"},
		{"anchored nested key", "leaves: {&k s: x}\n", "leaves: yaml anchors and aliases are not supported"},
		{"merge key", "items:\n  - <<: {id: a}\n", "items[0]: yaml merge keys are not supported"},
		{"top merge key", "<<: {name: a}\n", "document: yaml merge keys are not supported"},
		{"duplicate", "name: a\nname: b\n", "name: duplicate key"},
		{"nested duplicate", "items: [{id: a, id: b}]\n", "items[0].id: duplicate key"},
		{"unknown plain", "Name: a\n", "Name: unknown key"},
		{"unknown nested", "leaves: {x: 1}\n", "leaves.x: unknown key"},
		{"unknown odd", "name: a\n\"a b\": 1\n", "document: unknown key on line 2"},
		{"unknown long", strings.Repeat("k", 65) + ": 1\n", "document: unknown key on line 1"},
		{"unknown quiet", "auth:\n  token: t\n  secret: x\n", "auth: unknown key on line 3"},
		{"integer key", "1: a\n", "1: unknown key"}, // plain, so named
		{"sequence key", "? [a]\n: b\n", "document: unknown key on line 1"},
		{"untagged field unreachable", "Other: a\n", "Other: unknown key"},
		{"other tag ignored", "other_name: a\n", "other_name: unknown key"},
		{"string wants string", "name: 1\n", "name: must be a string"},
		{"bool yes", "leaves: {b: yes}\n", "leaves.b: must be true or false"},
		{"int float", "leaves: {i: 2.5}\n", "leaves.i: must be an integer"},
		{"int overflow", "leaves: {i64: 9223372036854775808}\n", "leaves.i64: must be an integer"},
		{"uint negative", "leaves: {u: -1}\n", "leaves.u: must be a non-negative integer"},
		{"float string", "leaves: {f: \"1\"}\n", "leaves.f: must be a number"},
		{"float nan", "leaves: {f: .nan}\n", "leaves.f: must be a finite number"},
		{"float inf", "leaves: {f: -.Inf}\n", "leaves.f: must be a finite number"},
		{"float out of range", "leaves: {f: 1e400}\n", "leaves.f: must be a number"},
		{"duration int", "leaves: {d: 30}\n", `leaves.d: must be a duration such as "30s"`},
		{"duration bad", "leaves: {d: soon}\n", `leaves.d: must be a duration such as "30s"`},
		{"unsupported", "leaves: {c: 1}\n", "leaves.c: unsupported schema type"},
		{"map wants list", "items: {id: a}\n", "items: must be a list"},
		{"list wants map", "leaves: [1]\n", "leaves: must be a mapping"},
		{"tagged map", "leaves: !!set {s}\n", "leaves: must be a mapping"},
		{"nested list", "grid: [[1], [2, x]]\n", "grid[1][1]: must be an integer"},
		{"nested list in map", "items: [{id: a, tags: [x, [y]]}]\n", "items[0].tags[1]: must be a string"},
		{"first problem wins", "name: 1\nother: 2\n", "name: must be a string"},
		{"empty", "", ": empty document"},
		{"comment only", "# nothing\n", ": empty document"},
		{"two documents", "name: a\n---\nname: b\n", ": multiple YAML documents are not supported"},
		{"scalar document", "a\n", ": document must be a mapping"},
		{"list document", "- a\n", ": document must be a mapping"},
		{"syntax", "name: [\n", ": invalid YAML syntax on line 1"},
		{"second document syntax", "name: a\n---\n[\n", ": invalid YAML syntax on line 3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want != "<nil>" && !strings.Contains(want, ": ") {
				want = ": " + want
			}
			assert.Equal(t, want, check(t, tc.doc, o).String())
		})
	}
}

func TestRefuseNull(t *testing.T) {
	doc := "leaves: {i64: null}\n"
	assert.Equal(t, "leaves.i64: must be an integer", check(t, doc, Options{Tag: "yaml"}).String())
	assert.Equal(t, "leaves.i64: must not be null", check(t, doc, Options{Tag: "yaml", RefuseNull: true}).String())
	assert.Equal(t, "leaves: must not be null", check(t, "leaves: ~\n", Options{Tag: "yaml", RefuseNull: true}).String())
	assert.Equal(t, "leaves.b: must be true or false",
		check(t, "leaves: {b: null}\n", Options{Tag: "yaml", RefuseNull: true}).String(), "only pointers are nullable")
}

func TestQuietIsNotInherited(t *testing.T) {
	o := Options{Tag: "yaml", Quiet: func(path string) bool { return path == "auth" }}
	assert.Equal(t, "items[0].secret: unknown key", check(t, "items: [{secret: x}]\n", o).String())
	assert.Equal(t, "secret: unknown key", check(t, "secret: x\n", Options{Tag: "yaml"}).String(), "nil Quiet")
}

func TestOtherTag(t *testing.T) {
	top, p := Document([]byte("other_name: a\n"), 100)
	require.Nil(t, p)
	assert.Nil(t, Check(top, schemaType, Options{Tag: "mapstructure"}))
}

func TestDocumentSize(t *testing.T) {
	_, p := Document([]byte("name: a\n"), 7)
	assert.Equal(t, ": document exceeds 7 bytes", p.String())
	top, p := Document([]byte("name: a\n"), 8)
	require.Nil(t, p)
	assert.Nil(t, Check(top, schemaType, Options{Tag: "yaml"}))
}

// TestProblemsEchoNoValues: a refused document's secret-looking content never reaches a Problem.
func TestProblemsEchoNoValues(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	o := Options{Tag: "yaml", Quiet: func(path string) bool { return path == "auth" }}
	for _, doc := range []string{
		"name: " + secret + "\nname: x\n",
		"auth: {" + secret + ": 1}\n",
		"\"" + secret + " \": 1\n",
		"leaves: {i: " + secret + "}\n",
		"name: [" + secret + "\n",
		"name: \"" + secret + "\n",
	} {
		p := check(t, doc, o)
		require.NotNil(t, p, doc)
		assert.NotContains(t, p.String(), secret)
	}
}

// TestCheckAll: every problem, in document order, the walk going on past each; Check stops at the
// first.
func TestCheckAll(t *testing.T) {
	doc := "name: 1\nleaves: {b: yes, i: 2.5, zz: 1}\nitems:\n  - {id: a, tags: x}\n  - {id: [b]}\nname: n\nauth: {secret-paste: v}\n"
	top, p := Document([]byte(doc), 1<<16)
	require.Nil(t, p)
	o := Options{Tag: "yaml", Quiet: func(path string) bool { return path == "auth" }}
	var got []string
	for _, p := range CheckAll(top, schemaType, o) {
		got = append(got, p.Path+": "+p.Msg)
	}
	assert.Equal(t, []string{
		"name: must be a string",
		"leaves.b: must be true or false",
		"leaves.i: must be an integer",
		"leaves.zz: unknown key",
		"items[0].tags: must be a list",
		"items[1].id: must be a string",
		"name: duplicate key",
		"auth: unknown key on line 7",
	}, got)
	first := Check(top, schemaType, o)
	require.NotNil(t, first)
	assert.Equal(t, "name", first.Path)
}
