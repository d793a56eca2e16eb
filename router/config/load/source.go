package load

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"sync"

	"github.com/anvil-llm/anvil/internal/regfile"
	"github.com/anvil-llm/anvil/router/config"
)

// MaxCertFileBytes bounds a TLS certificate or key file as Fingerprint reads it.
const MaxCertFileBytes = 1 << 20

// Source is one configuration file as the router reads it at start-up and on every reload (SIGHUP,
// POST /admin/v1/config/reload, serve --watch): the same bytes, the same environment, the same token
// files, so a reload accepts exactly what a restart would. It is safe for concurrent use.
type Source struct {
	path string
	env  func(string) (string, bool)
	// read reads a file of at most limit bytes (regfile.Read); tests replace it to change a file
	// between the two reads of one Load.
	read func(name string, limit int64) ([]byte, error)

	mu sync.Mutex
	// named caches which files the document with digest namedFor names, so that polling parses
	// the document only when its bytes change.
	namedFor string
	named    []namedFile
}

// namedFile is a file the document names: key is its setting (auth.caller_tokens_file).
type namedFile struct {
	key, name string
	limit     int64
}

// Loaded is one successful read of a Source.
type Loaded struct {
	Config config.Config
	// Path is the file as the Source names it.
	Path string
	// Digest is the SHA-256 of the file's bytes in lowercase hex, as `sha256sum FILE` prints it.
	Digest string
	// Fingerprint covers the file and every file it names as they were read; Fingerprint returns
	// the same string while none of them changes.
	Fingerprint string
}

// NewSource reads the file at path with environment lookups from env (nil: the process
// environment). Overrides such as `serve --listen` are layered into env by the caller.
func NewSource(path string, env func(string) (string, bool)) *Source {
	if env == nil {
		env = os.LookupEnv
	}
	return &Source{path: path, env: env, read: regfile.Read}
}

// Path is the configuration file's path.
func (s *Source) Path() string { return s.path }

// Load reads and validates the file as start-up does and checks that nothing it read changed
// meanwhile: the file and each token file are read again after validation and compared, so a file
// being written (an editor writing in place) is refused, never half applied. Every refusal is a
// *config.Error: config.ErrUnreadable for a file that cannot be read (missing, vanished, not a
// regular file), config.ErrChanged for a file that changed while being read, config.ErrInvalid for
// its content (YAML, unknown keys, validation, token files).
func (s *Source) Load(ctx context.Context) (Loaded, error) {
	if err := ctx.Err(); err != nil {
		return Loaded{}, err
	}
	data, err := s.read(s.path, MaxFileBytes)
	if err != nil {
		return Loaded{}, config.Unreadable(config.CannotRead("config file", s.path, err), err)
	}
	doc, err := parseDocument(data)
	if err != nil {
		return Loaded{}, err
	}
	tokens := map[string][]byte{}
	cfg, err := config.Build(doc, config.Sources{LookupEnv: s.env, ReadFile: func(name string) ([]byte, error) {
		b, err := s.read(name, config.MaxTokenFileBytes)
		if err == nil {
			tokens[name] = b
		}
		return b, err
	}})
	if err != nil {
		return Loaded{}, err
	}
	if again, err := s.read(s.path, MaxFileBytes); err != nil || !bytes.Equal(again, data) {
		return Loaded{}, config.Changed("")
	}
	named := namedFiles(doc)
	for _, f := range named {
		was, ok := tokens[f.name]
		if !ok {
			continue
		}
		if again, err := s.read(f.name, f.limit); err != nil || !bytes.Equal(again, was) {
			return Loaded{}, config.Changed(f.key)
		}
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	s.remember(digest, named)
	fp := s.fingerprint(data, named, func(f namedFile) ([]byte, error) {
		if b, ok := tokens[f.name]; ok {
			return b, nil
		}
		return s.read(f.name, f.limit)
	})
	return Loaded{Config: cfg, Path: s.path, Digest: digest, Fingerprint: fp}, nil
}

// Fingerprint is a cheap digest over the file and every file it names (token files, the TLS
// certificate and key), for polling: it changes when any of them does, so a rotated token file or
// certificate is seen even when the configuration file is untouched. A file that cannot be read
// contributes its error instead of its content, so a vanished file changes the fingerprint too; the
// document is parsed (without validation) only when its bytes change. The only error is ctx's.
func (s *Source) Fingerprint(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	data, err := s.read(s.path, MaxFileBytes)
	if err != nil {
		return s.fingerprint([]byte("unreadable: "+err.Error()), nil, nil), nil
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	named, ok := s.cached(digest)
	if !ok {
		if doc, err := parseDocument(data); err == nil {
			named = namedFiles(doc)
		}
		s.remember(digest, named)
	}
	return s.fingerprint(data, named, func(f namedFile) ([]byte, error) { return s.read(f.name, f.limit) }), nil
}

func (s *Source) cached(digest string) ([]namedFile, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.named, s.namedFor == digest && digest != ""
}

func (s *Source) remember(digest string, named []namedFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.namedFor, s.named = digest, named
}

// fingerprint frames the file's bytes and each named file's content (or read error) into one
// SHA-256, so no two different sets of contents collide by concatenation.
func (s *Source) fingerprint(data []byte, named []namedFile, read func(namedFile) ([]byte, error)) string {
	h := sha256.New()
	frame := func(label string, b []byte) {
		sum := sha256.Sum256(b)
		h.Write([]byte(label))
		h.Write([]byte{0})
		h.Write(sum[:])
	}
	frame("config", data)
	for _, f := range named {
		b, err := read(f)
		if err != nil {
			frame(f.key+" "+f.name+" unreadable", []byte(err.Error()))
			continue
		}
		frame(f.key+" "+f.name, b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// namedFiles lists the files a document names, in schema order.
func namedFiles(doc config.Document) []namedFile {
	var out []namedFile
	add := func(key string, p *string, limit int64) {
		if p != nil && *p != "" {
			out = append(out, namedFile{key: key, name: *p, limit: limit})
		}
	}
	if doc.TLS != nil {
		add("tls.cert_file", doc.TLS.CertFile, MaxCertFileBytes)
		add("tls.key_file", doc.TLS.KeyFile, MaxCertFileBytes)
	}
	if doc.Auth != nil {
		add("auth.caller_tokens_file", doc.Auth.CallerTokensFile, config.MaxTokenFileBytes)
		add("auth.admin_token_file", doc.Auth.AdminTokenFile, config.MaxTokenFileBytes)
		add("auth.observer_tokens_file", doc.Auth.ObserverTokensFile, config.MaxTokenFileBytes)
		for i, c := range doc.Auth.Callers {
			add(fmt.Sprintf("auth.callers[%d].token_file", i), c.TokenFile, config.MaxTokenFileBytes)
		}
	}
	return out
}
