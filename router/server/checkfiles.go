package server

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/intent"
)

// StartFiles are the files New opens at start besides the configuration and its token files (which
// the loader reads): the TLS pair, the decision log's JSONL file, the intent file.
type StartFiles struct {
	TLS         config.TLS
	DecisionLog string // decision_log.jsonl_path; "" for none
	IntentFile  string // intent_file; "" for none
}

// FileProblem is one start file that New would refuse: Key is the setting naming it (tls,
// decision_log.jsonl_path, intent_file) and Err New's own error for it.
type FileProblem struct {
	Key string
	Err error
}

// CheckStartFiles opens every start file with the very functions New uses, for `config check`, and
// leaves nothing behind: the TLS certificate and key are loaded as a pair (loadCertificate); an
// existing JSONL file is opened for appending (openAppend: a regular file, or a link to one), an
// absent one must be creatable in its directory; the intent file is read and validated
// (intent.Load: a regular file, not a link, a valid document) and its directory must take a new
// file (Store.Check). A TLS section missing half its pair is the configuration's error, not checked
// here.
func CheckStartFiles(f StartFiles) []FileProblem {
	var out []FileProblem
	if f.TLS.CertFile != "" && f.TLS.KeyFile != "" {
		if _, err := loadCertificate(f.TLS); err != nil {
			out = append(out, FileProblem{Key: "tls", Err: err})
		}
	}
	if f.DecisionLog != "" {
		if err := checkAppend(f.DecisionLog); err != nil {
			out = append(out, FileProblem{Key: "decision_log.jsonl_path", Err: err})
		}
	}
	if f.IntentFile != "" {
		store, _, err := intent.Load(intent.OS{}, f.IntentFile)
		if err == nil {
			err = store.Check()
		}
		if err != nil {
			out = append(out, FileProblem{Key: "intent_file", Err: err})
		}
	}
	return out
}

// checkAppend is openAppend without creating the file: an existing one is opened as New opens it;
// for an absent one, a file is created in its directory and removed again.
func checkAppend(path string) error {
	_, err := os.Stat(path)
	if err == nil {
		f, err := openAppend(path)
		if err != nil {
			return err
		}
		return f.Close()
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	probe, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".check-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the probe's own name would only confuse
		}
		return &fs.PathError{Op: "create", Path: path, Err: err}
	}
	name := probe.Name()
	err = probe.Close()
	if rerr := os.Remove(name); err == nil {
		err = rerr
	}
	return err
}
