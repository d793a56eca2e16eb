package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"
)

// RawFormat names the raw file's format in its header line.
const RawFormat = "anvil-bench-raw/1"

// Bounds of a raw file.
const (
	MaxRawLineBytes = 32 << 20 // a record of a million-token stream fits
	MaxRawRecords   = 50_000_000
	MaxRounds       = 100
	MaxURLs         = 256
	maxOffset       = time.Duration(1<<53 - 1) // serialized integers stay below 2^53
	maxTextField    = 512
)

// ErrRaw is wrapped by every error about a raw file; the message names the line and says what is
// wrong in fixed words, never echoing the file's content.
var ErrRaw = errors.New("invalid raw file")

var scenarioPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// RawHeader is the raw file's first line: what was run, so a report can be rebuilt from the file
// alone.
type RawHeader struct {
	Format   string       `json:"format"`
	Label    string       `json:"label"`
	Scenario string       `json:"scenario"`
	Seed     uint64       `json:"seed"`
	Endpoint string       `json:"endpoint"`
	Mode     string       `json:"mode"`
	Load     string       `json:"load"` // the load in words, for reports
	SLO      SLOMillis    `json:"slo"`
	Targets  []TargetInfo `json:"targets"`

	// ArrivalWindowS is the plan's arrival window in seconds (its duration); 0 when the plan was
	// a request count. A simulation of the same scenario runs for exactly this long.
	ArrivalWindowS float64 `json:"arrival_window_s,omitempty"`
}

// SLOMillis are goodput targets in milliseconds (0 = not checked), vLLM's --goodput units.
type SLOMillis struct {
	TTFT float64 `json:"ttft_ms"`
	TPOT float64 `json:"tpot_ms"`
	E2EL float64 `json:"e2el_ms"`
}

func (s SLOMillis) slo() SLO {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	return SLO{TTFT: ms(s.TTFT), TPOT: ms(s.TPOT), E2EL: ms(s.E2EL)}
}

// Millis is the SLO in milliseconds.
func (s SLO) Millis() SLOMillis {
	return SLOMillis{TTFT: millis(s.TTFT), TPOT: millis(s.TPOT), E2EL: millis(s.E2EL)}
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// TargetInfo names one target of a run and how its run ended. URLs are not kept: reports say how
// many there were.
type TargetInfo struct {
	Name    string `json:"name"`
	Model   string `json:"model"`
	URLs    int    `json:"urls"`
	Stopped string `json:"stopped,omitempty"` // why a run stopped early
}

// rawRecord is Record's line format; the field order is the line's key order.
type rawRecord struct {
	Target          string  `json:"target"`
	Round           int     `json:"round"`
	ID              int     `json:"id"`
	Warmup          bool    `json:"warmup"`
	URL             int     `json:"url"`
	Stream          bool    `json:"stream"`
	Scheduled       int64   `json:"scheduled_ns"`
	Start           int64   `json:"start_ns"`
	Chunks          []int64 `json:"chunks_ns"`
	End             int64   `json:"end_ns"`
	Status          int     `json:"status"`
	Outcome         string  `json:"outcome"`
	Detail          string  `json:"detail"`
	PromptTokens    int64   `json:"prompt_tokens"`
	OutputTokens    int64   `json:"output_tokens"`
	Usage           bool    `json:"usage"`
	RequestedPrompt int     `json:"requested_prompt"`
	RequestedOutput int     `json:"requested_output"`
	RetryAfter      int64   `json:"retry_after_ns"`
}

// WriteRaw writes the header line and one line per record.
func WriteRaw(w io.Writer, h RawHeader, recs []Record) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	h.Format = RawFormat
	if err := enc.Encode(h); err != nil {
		return err
	}
	var line rawRecord
	for i := range recs {
		r := &recs[i]
		line = rawRecord{
			Target: r.Target, Round: r.Round, ID: r.ID, Warmup: r.Warmup, URL: r.URL, Stream: r.Stream,
			Scheduled: int64(r.Scheduled), Start: int64(r.Start), Chunks: line.Chunks[:0], End: int64(r.End),
			Status: r.Status, Outcome: r.Outcome.String(), Detail: string(r.Detail),
			PromptTokens: r.PromptTokens, OutputTokens: r.OutputTokens, Usage: r.Usage,
			RequestedPrompt: r.RequestedPrompt, RequestedOutput: r.RequestedOutput, RetryAfter: int64(r.RetryAfter),
		}
		for _, c := range r.Chunks {
			line.Chunks = append(line.Chunks, int64(c))
		}
		if err := enc.Encode(&line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadRaw reads a raw file strictly: a header line, then record lines, each exactly one JSON object
// with exactly the documented keys (no unknown or duplicate key, no wrong type, no trailing data),
// every value within its bounds and consistent with the others. Blank lines are refused too.
func ReadRaw(r io.Reader) (RawHeader, []Record, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	line, n, err := readRawLine(br, 1)
	if err != nil {
		if err == io.EOF {
			return RawHeader{}, nil, fmt.Errorf("%w: empty file, expected a header line", ErrRaw)
		}
		return RawHeader{}, nil, err
	}
	var h RawHeader
	if err := strictDecode(line, &h); err != nil {
		return RawHeader{}, nil, rawErr(n, "header", err)
	}
	if err := h.validate(); err != nil {
		return RawHeader{}, nil, rawErr(n, "header", err)
	}
	var recs []Record
	var rr rawRecord
	for {
		n++
		line, _, err := readRawLine(br, n)
		if err == io.EOF {
			return h, recs, nil
		}
		if err != nil {
			return RawHeader{}, nil, err
		}
		if len(recs) >= MaxRawRecords {
			return RawHeader{}, nil, fmt.Errorf("%w: more than %d records", ErrRaw, MaxRawRecords)
		}
		rr = rawRecord{}
		if err := strictDecode(line, &rr); err != nil {
			return RawHeader{}, nil, rawErr(n, "record", err)
		}
		rec, err := rr.record(&h)
		if err != nil {
			return RawHeader{}, nil, rawErr(n, "record", err)
		}
		recs = append(recs, rec)
	}
}

func rawErr(line int, what string, err error) error {
	return fmt.Errorf("%w: line %d: %s: %w", ErrRaw, line, what, err)
}

// readRawLine returns the next line without its LF, bounded by MaxRawLineBytes; io.EOF at the end.
func readRawLine(br *bufio.Reader, n int) ([]byte, int, error) {
	var buf []byte
	for {
		part, err := br.ReadSlice('\n')
		buf = append(buf, part...)
		if len(buf) > MaxRawLineBytes+1 {
			return nil, n, fmt.Errorf("%w: line %d: longer than %d bytes", ErrRaw, n, MaxRawLineBytes)
		}
		switch err {
		case nil:
			line := buf[:len(buf)-1]
			if len(bytes.TrimSpace(line)) == 0 {
				return nil, n, fmt.Errorf("%w: line %d: blank line", ErrRaw, n)
			}
			return line, n, nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(buf) == 0 {
				return nil, n, io.EOF
			}
			return nil, n, fmt.Errorf("%w: line %d: the file does not end with a newline", ErrRaw, n)
		default:
			return nil, n, fmt.Errorf("read raw file: %w", err)
		}
	}
}

func (h *RawHeader) validate() error {
	switch {
	case h.Format != RawFormat:
		return fmt.Errorf("format must be %s", RawFormat)
	case !labelPattern.MatchString(h.Label):
		return errors.New("label must be 1-64 characters [A-Za-z0-9._-]")
	case h.Scenario != "" && !scenarioPattern.MatchString(h.Scenario):
		return errors.New("scenario must be a scenario name")
	case h.Mode != "closed" && h.Mode != "open":
		return errors.New("mode must be closed or open")
	case !printable(h.Load):
		return fmt.Errorf("load must be at most %d printable characters", maxTextField)
	case !(finite(h.SLO.TTFT) && finite(h.SLO.TPOT) && finite(h.SLO.E2EL)) || h.SLO.TTFT < 0 || h.SLO.TPOT < 0 || h.SLO.E2EL < 0:
		return errors.New("slo targets must be finite and not negative")
	case h.SLO.TTFT > millis(maxOffset) || h.SLO.TPOT > millis(maxOffset) || h.SLO.E2EL > millis(maxOffset):
		return errors.New("slo targets out of range")
	case !validWindow(h.ArrivalWindowS):
		return errors.New("arrival_window_s must be from 1 to 86400 seconds, or absent")
	case len(h.Targets) < 1 || len(h.Targets) > 2:
		return errors.New("targets must list one or two targets")
	case len(h.Targets) == 2 && (h.Targets[0].Name != "direct" || h.Targets[1].Name != "routed"):
		return errors.New("a comparison's targets are direct, then routed")
	}
	if _, err := ParseEndpoint(h.Endpoint); err != nil {
		return errors.New("endpoint must be chat, completions or responses")
	}
	for _, t := range h.Targets {
		switch {
		case !labelPattern.MatchString(t.Name):
			return errors.New("target name must be 1-64 characters [A-Za-z0-9._-]")
		case t.Model == "" || !printable(t.Model):
			return fmt.Errorf("target model must be 1-%d printable characters", maxTextField)
		case t.URLs < 1 || t.URLs > MaxURLs:
			return fmt.Errorf("target urls must be from 1 to %d", MaxURLs)
		case !printable(t.Stopped):
			return fmt.Errorf("target stopped must be at most %d printable characters", maxTextField)
		}
	}
	return nil
}

func finite(v float64) bool { return v-v == 0 }

// validWindow accepts an absent window (0) or one a plan may have: 1 s to MaxDuration.
func validWindow(s float64) bool {
	return s == 0 || finite(s) && s >= time.Second.Seconds() && s <= MaxDuration.Seconds()
}

func printable(s string) bool {
	if len(s) > maxTextField {
		return false
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f || r == '\uFFFD' {
			return false
		}
	}
	return true
}

// record checks a decoded line against the header and the record's own invariants.
func (rr *rawRecord) record(h *RawHeader) (Record, error) {
	target := -1
	for i, t := range h.Targets {
		if t.Name == rr.Target {
			target = i
		}
	}
	outcome, ok := ParseOutcome(rr.Outcome)
	switch {
	case target < 0:
		return Record{}, errors.New("target is not one of the header's targets")
	case rr.Round < 0 || rr.Round >= MaxRounds:
		return Record{}, fmt.Errorf("round must be from 0 to %d", MaxRounds-1)
	case rr.ID < 0 || rr.ID >= MaxRequests+MaxWarmup:
		return Record{}, errors.New("id out of range")
	case rr.URL < 0 || rr.URL >= h.Targets[target].URLs:
		return Record{}, errors.New("url is not an index of the target's urls")
	case !ok:
		return Record{}, errors.New("outcome is not an outcome class")
	case !validDetail(Detail(rr.Detail)):
		return Record{}, errors.New("detail is not a known detail")
	case !offset(rr.Scheduled) || !offset(rr.Start) || !offset(rr.End) || !offset(rr.RetryAfter):
		return Record{}, errors.New("times must be from 0 to 2^53-1 ns")
	case rr.RetryAfter > int64(MaxRetryAfter):
		return Record{}, errors.New("retry_after_ns above the honoured maximum")
	case rr.PromptTokens < 0 || rr.PromptTokens > maxTokens || rr.OutputTokens < 0 || rr.OutputTokens > maxTokens:
		return Record{}, errors.New("token counts out of range")
	case rr.RequestedPrompt < 0 || rr.RequestedPrompt > MaxRequestTokens || rr.RequestedOutput < 0 || rr.RequestedOutput > MaxRequestTokens:
		return Record{}, errors.New("requested token counts out of range")
	case !rr.Stream && len(rr.Chunks) > 0:
		return Record{}, errors.New("an ordinary response has no chunks")
	}
	if err := statusMatches(outcome, rr.Status); err != nil {
		return Record{}, err
	}
	rec := Record{
		Target: rr.Target, Round: rr.Round, ID: rr.ID, Warmup: rr.Warmup, URL: rr.URL, Stream: rr.Stream,
		Scheduled: time.Duration(rr.Scheduled), Start: time.Duration(rr.Start), End: time.Duration(rr.End),
		Status: rr.Status, Outcome: outcome, Detail: Detail(rr.Detail),
		PromptTokens: rr.PromptTokens, OutputTokens: rr.OutputTokens, Usage: rr.Usage,
		RequestedPrompt: rr.RequestedPrompt, RequestedOutput: rr.RequestedOutput, RetryAfter: time.Duration(rr.RetryAfter),
	}
	if len(rr.Chunks) > 0 {
		rec.Chunks = make([]time.Duration, len(rr.Chunks))
	}
	prev := int64(0)
	for i, c := range rr.Chunks {
		if c < prev || c > rr.End {
			return Record{}, errors.New("chunks must be ordered and within the request")
		}
		rec.Chunks[i], prev = time.Duration(c), c
	}
	if outcome == OK && rr.Stream && len(rr.Chunks) == 0 {
		return Record{}, errors.New("a successful stream has at least one chunk")
	}
	return rec, nil
}

func offset(v int64) bool { return v >= 0 && v <= int64(maxOffset) }

// statusMatches checks a record's status against its outcome class.
func statusMatches(o Outcome, status int) error {
	if status != 0 && (status < 100 || status > 599) {
		return errors.New("status must be 0 or 100-599")
	}
	want := true
	switch o {
	case OK:
		want = status == 200
	case HTTP4xx, HTTP429, HTTP503, HTTP5xx:
		want = status >= 400 && statusOutcome(status) == o
	case Malformed:
		want = status != 0 && (status < 400)
	}
	if !want {
		return errors.New("status does not match the outcome class")
	}
	return nil
}
