package config

// Sources are the inputs besides the document itself. Both may be nil: a
// nil LookupEnv means an empty environment; a nil ReadFile refuses token
// files (unless the environment overrides them).
type Sources struct {
	// LookupEnv reads one environment variable, like os.LookupEnv.
	LookupEnv func(key string) (string, bool)
	// ReadFile reads a token file. Results longer than MaxTokenFileBytes
	// are refused.
	ReadFile func(name string) ([]byte, error)
}

func (src Sources) lookup(key string) (string, bool) {
	if src.LookupEnv == nil {
		return "", false
	}
	return src.LookupEnv(key)
}

// Build validates a document into a Config: semantic validation of settings, tiers, aliases and
// finally credentials (last, because they may read token files through src). It reads no file and no
// process state itself; the loader (router/config/load) supplies the document and the sources.
func Build(doc Document, src Sources) (Config, error) {
	var c Config
	var err error
	if err = buildSettings(doc, src.lookup, &c); err != nil {
		return Config{}, err
	}
	if c.tiers, c.tierIndex, err = buildTiers(doc.Tiers, src.lookup); err != nil {
		return Config{}, err
	}
	aliases, byAlias, err := buildAliases(doc.Aliases, c.tierIndex)
	if err != nil {
		return Config{}, err
	}
	c.aliases, c.aliasIndex = aliases, byAlias
	if c.auth, err = buildAuth(doc.Auth, src); err != nil {
		return Config{}, err
	}
	if err = upstreamKeysDistinct(c); err != nil {
		return Config{}, err
	}
	return c, nil
}
