package qualification

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/yamlschema"
)

// MaxFileBytes bounds a qualification file.
const MaxFileBytes = 256 << 10

// ErrInvalid is wrapped by every refusal of a qualification file.
var ErrInvalid = errors.New("invalid qualification file")

// Error names the offending path ("tier.members[1].url") and says what is wrong in fixed words; it
// never echoes a value of the file, which may sit next to secrets.
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "qualification: " + e.Msg
	}
	return "qualification: " + e.Path + ": " + e.Msg
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Unwrap() error { return ErrInvalid }

func invalid(path, msg string) error { return &Error{Path: path, Msg: msg} }

func invalidf(path, format string, args ...any) error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// File is the qualification file's closed schema (QUAL.yaml). Every key is documented in
// docs/benchmarks/methodology.md; Parse validates it into a Plan.
type File struct {
	Qualification  string             `yaml:"qualification"`
	Output         string             `yaml:"output"`
	Seed           uint64             `yaml:"seed"`
	Endpoint       string             `yaml:"endpoint"`
	RequestTimeout time.Duration      `yaml:"request_timeout"`
	Router         RouterDoc          `yaml:"router"`
	Tier           TierDoc            `yaml:"tier"`
	Workload       scenarios.Workload `yaml:"workload"`
	Phases         PhasesDoc          `yaml:"phases"`
	SLO            SLODoc             `yaml:"slo"`
	Approval       ApprovalDoc        `yaml:"approval"`
}

// RouterDoc is the router under qualification and where its tokens come from (an environment
// variable or a file, never the token itself).
type RouterDoc struct {
	URL             string `yaml:"url"`
	Alias           string `yaml:"alias"`
	AdminTokenEnv   string `yaml:"admin_token_env"`
	AdminTokenFile  string `yaml:"admin_token_file"`
	CallerTokenEnv  string `yaml:"caller_token_env"`
	CallerTokenFile string `yaml:"caller_token_file"`
}

// TierDoc is the replica tier as the operator declares it: what the router's capacity view and
// every member must agree with.
type TierDoc struct {
	ID              string        `yaml:"id"`
	ServedModel     string        `yaml:"served_model"`
	Strategy        string        `yaml:"strategy"`
	MaxConcurrency  int64         `yaml:"max_concurrency"`
	Provenance      ProvenanceDoc `yaml:"provenance"`
	MemberTokenEnv  string        `yaml:"member_token_env"`
	MemberTokenFile string        `yaml:"member_token_file"`
	Members         []MemberDoc   `yaml:"members"`
}

// ProvenanceDoc is the declared replica provenance: a statement (as the router config's
// tiers[].provenance) and the parts of it a member reports and the run checks.
type ProvenanceDoc struct {
	Statement     string `yaml:"statement"`
	EngineVersion string `yaml:"engine_version"`
	MaxModelLen   int64  `yaml:"max_model_len"`
}

// MemberDoc is one member: its router ID, its own base URL and its ceiling.
type MemberDoc struct {
	ID             string `yaml:"id"`
	URL            string `yaml:"url"`
	MaxConcurrency int64  `yaml:"max_concurrency"`
}

// PhasesDoc sizes the load phases.
type PhasesDoc struct {
	Matched   LoadDoc    `yaml:"matched"`
	Sustained LoadDoc    `yaml:"sustained"`
	Failure   FailureDoc `yaml:"failure"`
	// Calibration is the optional ceiling sweep against one member (calibration.go); absent, the
	// run has no calibration phase.
	Calibration    *CalibrationDoc `yaml:"calibration"`
	SampleEvery    time.Duration   `yaml:"sample_every"`
	RestoreTimeout time.Duration   `yaml:"restore_timeout"`
}

// LoadDoc is a phase's size: a request count or an arrival window, and warm-up requests.
type LoadDoc struct {
	Requests int           `yaml:"requests"`
	Duration time.Duration `yaml:"duration"`
	Warmup   int           `yaml:"warmup"`
}

// FailureDoc is the failure-injection phase.
type FailureDoc struct {
	Member    string        `yaml:"member"`
	Duration  time.Duration `yaml:"duration"` // the most the load may last: it ends when the member is readmitted
	Hold      time.Duration `yaml:"hold"`
	DrainWait time.Duration `yaml:"drain_wait"`
}

// SLODoc are the promotion gate's targets on the routed and sustained phases.
type SLODoc struct {
	MinSuccess      *float64      `yaml:"min_success"`
	TTFTP99         time.Duration `yaml:"ttft_p99"`
	TPOTP99         time.Duration `yaml:"tpot_p99"`
	E2ELP99         time.Duration `yaml:"e2el_p99"`
	MaxAddedE2ELP50 time.Duration `yaml:"max_added_e2el_p50"`
}

// ApprovalDoc is the operator's approval: the digest of the approval token over this plan's
// fingerprint (see Digest).
type ApprovalDoc struct {
	Digest string `yaml:"digest"`
}

// decode is the strict pass shared with the router's config and the scenarios: one YAML document,
// a mapping at the top, exactly the keys of File, no duplicates, anchors, aliases or merge keys, and
// every value of its field's YAML type (package yamlschema); then yaml.v3 decodes it.
func decode(data []byte) (f File, err error) {
	defer func() {
		// A parser of outside input must return an error, never crash its caller.
		if r := recover(); r != nil {
			f, err = File{}, invalid("", "invalid YAML syntax")
		}
	}()
	top, p := yamlschema.Document(data, MaxFileBytes)
	if p != nil {
		return File{}, invalid(p.Path, p.Msg)
	}
	if p := yamlschema.Check(top, reflect.TypeFor[File](), yamlschema.Options{Tag: "yaml", RefuseNull: true}); p != nil {
		return File{}, invalid(cmp.Or(p.Path, "document"), p.Msg)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return File{}, invalid("", "document could not be decoded") // unreachable after the gate
	}
	return f, nil
}
