package yamlschema

import (
	"strings"
	"testing"
)

// FuzzCheck: Document and Check never panic on any input, CheckAll's first problem is Check's, and a refusal is a fixed sentence that
// never contains a line of the document longer than a plain key.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		"name: n\nleaves: {s: x, b: true, i: -3, i64: 1_000, u: 7, f: .5, d: 1m30s, c: 1}\n",
		"items:\n  - id: a\n    tags: [x, y]\n  - &a {id: b}\n  - *a\ngrid: [[1, 2], [], [3]]\n",
		"<<: {name: a}\nauth: {token: t, k: v}\n",
		"leaves: {f: .nan, u: -1, i: 0x7fffffffffffffff, d: !!str 1h}\n",
		"&a [*a]\n", "---\n---\n", "? [a]\n: b\n", "name: !!binary aGVsbG8=\n",
	} {
		f.Add([]byte(seed))
	}
	o := Options{Tag: "yaml", RefuseNull: true, Quiet: func(path string) bool { return path == "auth" }}
	f.Fuzz(func(t *testing.T, data []byte) {
		top, p := Document(data, 1<<16)
		if p == nil {
			if top == nil {
				t.Fatal("no problem and no top node")
			}
			p = Check(top, schemaType, o)
			all := CheckAll(top, schemaType, o)
			if (p == nil) != (len(all) == 0) || p != nil && *all[0] != *p {
				t.Fatalf("CheckAll %v does not start with Check's %v for %q", all, p, data)
			}
		}
		if p == nil {
			return
		}
		if p.Msg == "" {
			t.Fatalf("empty message for %q", data)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if len(line) > 64 && strings.Contains(p.Path+p.Msg, line) {
				t.Fatalf("problem %q echoes document line %q", p.Path+": "+p.Msg, line)
			}
		}
	})
}
