// Package yamlschema is the strict gate that router/config and scenarios run over a YAML document
// before anything decodes it: exactly one document, a mapping at the top, and a yaml.Node walk
// against a closed Go struct schema (by reflection on a struct tag) that refuses anchors, aliases
// and merge keys, unknown and duplicate keys, and every value whose resolved YAML type is not the
// one its field needs.
//
// It exists because the decoders behind those packages are lenient in ways that change meaning
// (viper folds key case and truncates 2.5 to 2, yaml.v3 reports duplicates only into Go maps and
// names lines, not paths) and quote document text in their errors. A Problem is a fixed sentence
// at a dotted path ("tiers[1].members[0].id"); it never echoes a document value, and a key is
// named only when it is a plain word. Each caller wraps a Problem in its own error type.
package yamlschema
