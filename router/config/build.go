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
// process state itself; the loader (router/config/load) supplies the document and the sources. Its
// error is BuildAll's first.
func Build(doc Document, src Sources) (Config, error) {
	c, errs := BuildAll(doc, src)
	if len(errs) > 0 {
		return Config{}, errs[0]
	}
	return c, nil
}

// BuildAll is Build reporting every independent error, in Build's order: each settings section's
// first, each tier's first, the aliases' first (only when every tier is valid: an alias names a tier)
// and the credentials' first. The Config is valid only when there is no error.
func BuildAll(doc Document, src Sources) (Config, []error) {
	var c Config
	errs := buildSettings(doc, src.lookup, &c)
	var tierErrs []error
	c.tiers, c.tierIndex, tierErrs = buildTiers(doc.Tiers, src.lookup)
	errs = append(errs, tierErrs...)
	if len(tierErrs) == 0 {
		aliases, byAlias, err := buildAliases(doc.Aliases, c.tierIndex)
		if err != nil {
			errs = append(errs, err)
		}
		c.aliases, c.aliasIndex = aliases, byAlias
	}
	var err error
	if c.auth, err = buildAuth(doc.Auth, src); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return Config{}, errs
	}
	if err = upstreamKeysDistinct(c); err != nil {
		return Config{}, []error{err}
	}
	return c, nil
}
