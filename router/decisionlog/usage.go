package decisionlog

// Usage is the token counts a member reported for its answer, read from the answer's own usage object
// (see router/relay): never estimated. The zero Usage is "not reported" (unknown): a member that
// reports nothing, an answer that failed before its usage, and every record without an attempt.
type Usage struct {
	// Prompt is the prompt (input) tokens the member counted; Completion the completion (output)
	// tokens, 0 for an answer that generates none (embeddings). Both are 0 when Reported is false.
	Prompt, Completion int64
	// Reported says the member reported the counts; only a record with an attempt can carry them.
	Reported bool
}

// MaxTokens bounds each count, so serialized integers stay exact in every JSON reader (below 2^53).
const MaxTokens = 1<<53 - 1

// checkUsage enforces Usage's invariants on a record: counts in 0..MaxTokens, none without a report,
// and a report only beside an attempt.
func checkUsage(r *Record) error {
	u := r.Usage
	switch {
	case u.Prompt < 0 || u.Prompt > MaxTokens:
		return &fieldError{"prompt_tokens", ErrInvalidValue}
	case u.Completion < 0 || u.Completion > MaxTokens:
		return &fieldError{"completion_tokens", ErrInvalidValue}
	case !u.Reported && (u.Prompt != 0 || u.Completion != 0):
		return &fieldError{"prompt_tokens", ErrInconsistent}
	case u.Reported && r.Attempts != 1:
		return &fieldError{"prompt_tokens", ErrInconsistent}
	}
	return nil
}

// appendUsage appends the two usage fields when the record carries a report.
func appendUsage(b []byte, u Usage) []byte {
	if !u.Reported {
		return b
	}
	b = appendIntField(b, `,"prompt_tokens":`, u.Prompt)
	return appendIntField(b, `,"completion_tokens":`, u.Completion)
}

// usageKey reports the record keys of a usage report: they come together or not at all.
func usageKey(k string) bool { return k == "prompt_tokens" || k == "completion_tokens" }

// usageKeyCount is 1 for a usage key, else 0: the decoder counts them to refuse one without the other.
func usageKeyCount(k string) int {
	if usageKey(k) {
		return 1
	}
	return 0
}

// usageField decodes prompt_tokens or completion_tokens into u.
func (t tokens) usageField(u *Usage, key, path string) error {
	v, _, err := t.integer(path, 0, MaxTokens, false)
	u.Reported = true
	if key == "prompt_tokens" {
		u.Prompt = v
	} else {
		u.Completion = v
	}
	return err
}
