package engine

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalidProfile is wrapped by every profile validation error.
var ErrInvalidProfile = errors.New("invalid engine profile")

// Limits of a Profile. They keep every step-time product inside int64
// nanoseconds and every count inside int, whatever an operator writes.
const (
	MinStepBase            = time.Microsecond
	MaxStepBase            = 10 * time.Second
	MaxPerTokenCost        = time.Second // PrefillPerToken, DecodePerSeq
	MaxContextPerTokenCost = time.Millisecond
	MaxJitter              = 0.5
	MaxNumSeqsLimit        = 1 << 16
	MaxBatchedTokensLimit  = 1 << 24
	MaxGPUBlocksLimit      = 1 << 24
	MaxBlockSize           = 1 << 10
	MaxModelLenLimit       = 1 << 24
	MaxNameLen             = 64
)

// Profile is the cost model and the capacity of one engine. Field names in
// errors are the snake_case keys of the profile YAML (vLLM's own names).
type Profile struct {
	// Name identifies the profile: 1-64 characters [a-z0-9._-], first one
	// alphanumeric.
	Name string

	// Step time = StepBase + PrefillPerToken*prefill_tokens +
	// DecodePerSeq*decode_seqs + ContextPerToken*context_tokens_read.
	StepBase, PrefillPerToken, DecodePerSeq, ContextPerToken time.Duration

	// Jitter is the relative half-width of a uniform, seeded perturbation of
	// every step time: 0.05 means each step takes 95%..105% of the model
	// time. 0 turns it off (the default).
	Jitter float64

	MaxNumSeqs          int // running-set bound (vLLM max_num_seqs)
	MaxNumBatchedTokens int // per-step token budget (vLLM max_num_batched_tokens)
	// MaxModelLen bounds prompt plus output tokens of one request. 0 means
	// the KV capacity (NumGPUBlocks-1)*BlockSize, capped at MaxModelLenLimit.
	MaxModelLen int
	// NumGPUBlocks counts KV blocks including vLLM's reserved null block, so
	// NumGPUBlocks-1 blocks hold tokens.
	NumGPUBlocks int
	BlockSize    int // tokens per KV block (16 in vLLM by default)
}

// ProfileError names the offending profile field.
type ProfileError struct {
	Field   string // snake_case key, e.g. "max_num_seqs"
	Problem string // fixed text, e.g. "must be from 1 to 65536"
}

func (e *ProfileError) Error() string {
	return "engine profile: field " + e.Field + ": " + e.Problem
}

// Unwrap makes errors.Is(err, ErrInvalidProfile) true.
func (e *ProfileError) Unwrap() error { return ErrInvalidProfile }

// DefaultProfile is "8b-h100": an 8B model on one H100 (vLLM defaults).
func DefaultProfile() Profile {
	return Profile{
		Name:                "8b-h100",
		StepBase:            5750 * time.Microsecond,
		PrefillPerToken:     17 * time.Microsecond,
		DecodePerSeq:        6 * time.Microsecond,
		ContextPerToken:     40 * time.Nanosecond,
		MaxNumSeqs:          256,
		MaxNumBatchedTokens: 8192,
		MaxModelLen:         131072,
		NumGPUBlocks:        29205,
		BlockSize:           16,
	}
}

// TinyProfile is "tiny": millisecond steps and a 64-block KV pool, so tests
// reach batching limits and preemption with a handful of requests.
func TinyProfile() Profile {
	return Profile{
		Name:                "tiny",
		StepBase:            time.Millisecond,
		PrefillPerToken:     2 * time.Microsecond,
		DecodePerSeq:        20 * time.Microsecond,
		ContextPerToken:     10 * time.Nanosecond,
		MaxNumSeqs:          8,
		MaxNumBatchedTokens: 256,
		MaxModelLen:         1024,
		NumGPUBlocks:        65,
		BlockSize:           16,
	}
}

// KVCapacityTokens is the number of tokens the usable blocks hold.
func (p Profile) KVCapacityTokens() int { return (p.NumGPUBlocks - 1) * p.BlockSize }

// ModelLen is MaxModelLen with 0 resolved to the KV capacity (capped at
// MaxModelLenLimit).
func (p Profile) ModelLen() int {
	if p.MaxModelLen == 0 {
		return min(p.KVCapacityTokens(), MaxModelLenLimit)
	}
	return p.MaxModelLen
}

// Validate checks every field against its limit and reports the first
// violation in field order.
func (p Profile) Validate() error {
	if !validName(p.Name) {
		return &ProfileError{"name", "must be 1-64 characters [a-z0-9._-] starting with a letter or digit"}
	}
	checks := []struct {
		field   string
		v, lo   time.Duration
		hi      time.Duration
		problem string
	}{
		{"step_base", p.StepBase, MinStepBase, MaxStepBase, "must be a duration from 1µs to 10s"},
		{"prefill_per_token", p.PrefillPerToken, 0, MaxPerTokenCost, "must be a duration from 0 to 1s"},
		{"decode_per_seq", p.DecodePerSeq, 0, MaxPerTokenCost, "must be a duration from 0 to 1s"},
		{"context_per_token", p.ContextPerToken, 0, MaxContextPerTokenCost, "must be a duration from 0 to 1ms"},
	}
	for _, c := range checks {
		if c.v < c.lo || c.v > c.hi {
			return &ProfileError{c.field, c.problem}
		}
	}
	if math.IsNaN(p.Jitter) || p.Jitter < 0 || p.Jitter > MaxJitter {
		return &ProfileError{"jitter", "must be a number from 0 to 0.5"}
	}
	return p.validateCounts()
}

func (p Profile) validateCounts() error {
	ints := []struct {
		field  string
		v, lo  int
		hi     int
		bounds string
	}{
		{"max_num_seqs", p.MaxNumSeqs, 1, MaxNumSeqsLimit, "1 to 65536"},
		{"max_num_batched_tokens", p.MaxNumBatchedTokens, 1, MaxBatchedTokensLimit, "1 to 16777216"},
		{"num_gpu_blocks", p.NumGPUBlocks, 2, MaxGPUBlocksLimit, "2 to 16777216"},
		{"block_size", p.BlockSize, 1, MaxBlockSize, "1 to 1024"},
	}
	for _, c := range ints {
		if c.v < c.lo || c.v > c.hi {
			return &ProfileError{c.field, "must be an integer from " + c.bounds}
		}
	}
	if p.MaxModelLen < 0 || p.MaxModelLen > MaxModelLenLimit {
		return &ProfileError{"max_model_len", "must be an integer from 0 (the KV capacity) to 16777216"}
	}
	if p.MaxModelLen > p.KVCapacityTokens() {
		return &ProfileError{"max_model_len", fmt.Sprintf(
			"must not exceed the KV capacity (num_gpu_blocks-1)*block_size = %d", p.KVCapacityTokens())}
	}
	return nil
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
		if !alnum && (i == 0 || (c != '.' && c != '_' && c != '-')) {
			return false
		}
	}
	return true
}
