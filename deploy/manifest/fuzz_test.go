package manifest

import (
	"os"
	"testing"
)

// FuzzDecode: no document, however malformed, crashes the decoder; it yields a Set or an ErrDecode.
func FuzzDecode(f *testing.F) {
	for _, p := range []string{"../kubernetes/base/statefulset.yaml", "../kubernetes/base/service.yaml",
		"../kubernetes/base/pdb.yaml", "../kubernetes/overlays/prometheus/servicemonitor.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("---\n---\n# only comments\n"))
	f.Add([]byte("apiVersion: v1\nkind: Service\nspec: {ports: [{port: 99999999999}]}\n"))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\ndata: &a {x: *a}\n"))
	f.Add([]byte("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"data\":{\"k\":\"!!\"}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := Decode(data)
		if (set == nil) == (err == nil) {
			t.Fatalf("Decode returned set %v and error %v", set != nil, err)
		}
	})
}
