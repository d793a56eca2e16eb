// Package config loads and validates the router's YAML configuration into an
// immutable Config. It is the only router package that imports viper.
//
// Reading guide:
//
//   - load.go: Load (file + process environment + token files), Parse (pure,
//     for tests and fuzzing), ParseWith (explicit Sources) and the pipeline.
//   - gate.go: the strict first pass over the raw bytes with yaml.v3. It
//     exists because viper alone is lenient in ways a closed schema cannot
//     accept: it lower-cases keys (Listen and listen silently merge), yaml.v3
//     reports duplicate keys only when decoding into Go maps, and viper's
//     mapstructure decoding truncates 2.5 to 2, wraps large integers and reads
//     a bare 30 as 30ns. The gate refuses duplicate keys, unknown or
//     mixed-case keys, anchors, aliases, merge keys, multiple documents and
//     any value whose YAML type differs from the schema, naming the path.
//   - raw.go: the closed input schema, shared by the gate and viper.
//   - settings.go, tiers.go, replica.go, auth.go: semantic validation, one
//     fixed message per rule, each naming the offending path, never a value.
//   - config.go, secret.go: the immutable result and the redacting Secret.
//   - normalize.go: Normalized, the redacted YAML for `config check`.
//
// Every refusal is an *Error wrapping ErrInvalid (or ErrUnreadable when the
// file itself cannot be read) with the text "config: PATH: MESSAGE".
// docs/CONFIGURATION.md documents every key, default and rule.
package config
