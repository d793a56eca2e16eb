// Package config is the router's validated, immutable configuration model: Document (the closed input
// schema, one field per YAML key), Build (every semantic rule, one fixed message per rule, each naming
// the offending path, never a value) and Config (the result, with redacting Secrets). It does no I/O of
// its own: environment lookups and token-file reads come in through Sources. Reading YAML files,
// viper and the strict YAML gate live in router/config/load, kept apart so that the model (and the
// routing walk and the simulator that use it) never links viper.
//
// Reading guide:
//
//   - document.go: the closed input schema, shared by the loader's gate and viper.
//   - build.go: Build and Sources.
//   - settings.go, tiers.go, replica.go, auth.go: semantic validation.
//   - config.go, secret.go: the immutable result and the redacting Secret.
//   - normalize.go: Normalized, the redacted YAML for `config check`.
//   - grammar.go: names, tokens, endpoints and listen addresses (IDs and aliases come from router/ident).
//
// Every refusal is an *Error wrapping ErrInvalid (or ErrUnreadable when the file itself cannot be read)
// with the text "config: PATH: MESSAGE". docs/CONFIGURATION.md documents every key, default and rule.
package config
