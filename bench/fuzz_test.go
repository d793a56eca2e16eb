package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Raw files are outside input: any bytes either read into records that round-trip exactly, or
// fail with ErrRaw; nothing panics.
func FuzzReadRaw(f *testing.F) {
	h, recs := sampleRun()
	var buf bytes.Buffer
	require.NoError(f, WriteRaw(&buf, h, recs))
	valid := buf.String()
	f.Add(valid)
	f.Add(strings.SplitAfter(valid, "\n")[0])
	f.Add(strings.Replace(valid, `"id":1`, `"id":1,"id":2`, 1))
	f.Add(strings.Replace(valid, `"chunks_ns":[50000000`, `"chunks_ns":[-5`, 1))
	f.Add(strings.Replace(valid, "\n", "\r\n", -1))
	f.Add("")
	f.Add("{}\n")
	f.Fuzz(func(t *testing.T, in string) {
		h, recs, err := ReadRaw(strings.NewReader(in))
		if err != nil {
			require.ErrorIs(t, err, ErrRaw)
			return
		}
		var out bytes.Buffer
		require.NoError(t, WriteRaw(&out, h, recs))
		h2, recs2, err := ReadRaw(&out)
		require.NoError(t, err)
		require.Equal(t, h, h2)
		require.Equal(t, len(recs), len(recs2))
		for i := range recs {
			require.Equal(t, recs[i].Chunks == nil, recs2[i].Chunks == nil)
			require.Equal(t, recs[i], recs2[i])
		}
		_ = Build(h, recs) // any valid file builds a report
	})
}

// Streams are outside input: any bytes end in a frame sequence or a classified error, with no
// frame above the bound and no panic.
func FuzzStream(f *testing.F) {
	f.Add([]byte(roleChunk + chatChunk("a") + finishChunk + usageChunk(3, 1) + doneFrame))
	f.Add([]byte("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"x\"}\n\n"))
	f.Add([]byte("data: {\"object\":\"text_completion\",\"choices\":[{\"text\":\"x\"}]}\r\n\r\n: ping\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: a\rb\n\n"))
	f.Add([]byte("data: {\"error\":{}}\n\n"))
	f.Add([]byte("data: " + strings.Repeat("x", 300) + "\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, ep := range []Endpoint{Chat, Completions, Responses} {
			r := newSSEReader(bufio.NewReaderSize(bytes.NewReader(in), 16), 256)
			p := answerParser{ep: ep}
			for {
				_, data, err := r.next()
				if err != nil {
					break
				}
				require.LessOrEqual(t, len(data), 256)
				if _, _, err := p.frame(data); err != nil {
					break
				}
			}
			_, _, _ = p.body(in)
		}
	})
}

func FuzzParseDist(f *testing.F) {
	for _, s := range []string{"128", "uniform:min=64,max=1024", "lognormal:median=512,sigma=0.8,min=16,max=8192",
		"normal:mean=1,stddev=2,min=1,max=9", "constant:value=1", "uniform:min=1,min=2", "x:y=z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		d, err := ParseDist(spec)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			return
		}
		again, err := ParseDist(DistString(d))
		require.NoError(t, err)
		require.Equal(t, d, again)
	})
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range [][2]string{{"", "3"}, {"", "2.5"}, {"1500", ""}, {"", "Wed, 21 Oct 2015 07:28:00 GMT"}, {"", "1e400"}, {"9e999", "1"}} {
		f.Add(s[0], s[1])
	}
	now := time.Date(2015, 10, 21, 7, 27, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, msHeader, header string) {
		h := http.Header{}
		h.Set("Retry-After-Ms", msHeader)
		h.Set("Retry-After", header)
		d := RetryAfter(h, now)
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.LessOrEqual(t, d, MaxRetryAfter)
	})
}

// BenchmarkStreamReader reads a fakevllm-shaped chat stream of 256 content chunks frame by frame
// and classifies every frame, as the client does: the per-chunk cost of a measured stream.
func BenchmarkStreamReader(b *testing.B) {
	var s strings.Builder
	s.WriteString(roleChunk)
	for i := range 256 {
		s.WriteString(`data: {"id":"chatcmpl-0123456789abcdef","object":"chat.completion.chunk","created":1733000000,"model":"demo/llama-3.1-8b","choices":[{"index":0,"delta":{"content":" token` +
			string(rune('a'+i%26)) + `"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	}
	s.WriteString(finishChunk + usageChunk(512, 256) + doneFrame)
	stream := []byte(s.String())
	br := bufio.NewReaderSize(nil, streamBufferBytes)
	src := bytes.NewReader(stream)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(stream)
		br.Reset(src)
		r := newSSEReader(br, MaxFrameBytes)
		p := answerParser{ep: Chat}
		tokens := 0
		for {
			_, data, err := r.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			kind, _, err := p.frame(data)
			if err != nil {
				b.Fatal(err)
			}
			if kind == frameToken {
				tokens++
			}
		}
		if tokens != 256 {
			b.Fatalf("%d tokens", tokens)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/258, "ns/frame")
}

// The answer scanner decides exactly as encoding/json decoding into answerJSON would: the same
// documents are refused, and accepted ones give the same fields.
func FuzzScanMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{
		roleChunk[6:], chatChunk("a")[6:], finishChunk[6:], usageChunk(3, 2)[6:], "[DONE]", "null", "{}", "[]", `"x"`,
		`{"object":"chat.completion","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":7,"completion_tokens":3}}`,
		`{"type":"response.completed","response":{"usage":{"input_tokens":4,"output_tokens":9},"output":[{"a":[1,2.5e3,-0,true,false,null]}]}}`,
		`{"choices":[{"delta":{"content":"x"}},{"delta":7}],"CHOICES":[],"Usage":{"prompt_tokens":-0},"error":null}`,
		`{"choices":null,"usage":"x","object":"\u0063hat"}`, `{"obj\u0065ct":"chat.completion.chunk"}`, "{\"\u212aey\":1,\"\u017ftatus\":\"failed\"}", `{"a":"\ud800"}`,
		`{"choices":[{"text":null,"delta":null}],"delta":"","status":"failed"}`, `{"usage":{"output_tokens":9007199254740992}}`,
		`{"x":1}trailing`, `{"a":01}`, `{"a":"` + "\x01" + `"}`, strings.Repeat("[", 20) + strings.Repeat("]", 20),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want, got answerJSON
		wantErr := json.Unmarshal(in, &want)
		gotErr := scanAnswer(in, &got)
		require.Equal(t, wantErr == nil, gotErr == nil, "encoding/json: %v, scanner: %v", wantErr, gotErr)
		if wantErr == nil {
			require.Equal(t, want, got)
		}
	})
}
