package egress

import (
	"strings"
	"testing"
)

var providerTests = []struct {
	name, doc string
	ok        bool
}{
	{"openai defaults", `[{"name":"openai","base_url":"https://api.openai.com/v1"}]`, true},
	{"anthropic header", `[{"name":"anthropic","base_url":"https://api.anthropic.com/v1","header":"x-api-key","key":"anthropic","paths":["/messages"],"headers":["anthropic-version"]}]`, true},
	{"two providers", `[{"name":"a","base_url":"http://127.0.0.1:9000"},{"name":"b","base_url":"https://b.example/v1/"}]`, true},
	{"empty list", `[]`, false},
	{"not a list", `{"name":"a"}`, false},
	{"unknown field", `[{"name":"a","base_url":"https://a.example","secret":"x"}]`, false},
	{"trailing data", `[{"name":"a","base_url":"https://a.example"}] []`, false},
	{"duplicate", `[{"name":"a","base_url":"https://a.example"},{"name":"a","base_url":"https://b.example"}]`, false},
	{"bad name", `[{"name":"A/b","base_url":"https://a.example"}]`, false},
	{"ftp", `[{"name":"a","base_url":"ftp://a.example"}]`, false},
	{"credentials in url", `[{"name":"a","base_url":"https://u:p@a.example"}]`, false},
	{"query in url", `[{"name":"a","base_url":"https://a.example/v1?k=1"}]`, false},
	{"dot segment in url", `[{"name":"a","base_url":"https://a.example/v1/../x"}]`, false},
	{"header injection in prefix", `[{"name":"a","base_url":"https://a.example","header":"Authorization","prefix":"x\r\nEvil: 1"}]`, false},
	{"bad header", `[{"name":"a","base_url":"https://a.example","header":"Auth orization"}]`, false},
	{"dotted key", `[{"name":"a","base_url":"https://a.example","key":"a.b"}]`, false},
	{"bad path", `[{"name":"a","base_url":"https://a.example","paths":["chat"]}]`, false},
	{"dot path", `[{"name":"a","base_url":"https://a.example","paths":["/a/../b"]}]`, false},
	{"path of no kind", `[{"name":"a","base_url":"https://a.example","paths":["/files"]}]`, false},
	{"generation under a prefix", `[{"name":"a","base_url":"https://a.example","paths":["/chat/"]}]`, false},
	{"gateway paths", `[{"name":"a","base_url":"https://a.example","paths":["/v2/chat/completions","/v2/models/"],"max_output_tokens":8192}]`, true},
	{"negative max output", `[{"name":"a","base_url":"https://a.example","max_output_tokens":-1}]`, false},
	{"forwarding a credential header", `[{"name":"a","base_url":"https://a.example","headers":["Authorization"]}]`, false},
}

func TestParseProviders(t *testing.T) {
	for _, tt := range providerTests {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := ParseProviders([]byte(tt.doc))
			if (err == nil) != tt.ok {
				t.Fatalf("ParseProviders = %+v, %v; want ok=%v", ps, err, tt.ok)
			}
		})
	}
	ps, err := ParseProviders([]byte(providerTests[0].doc))
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	if p.Header != "Authorization" || p.Prefix != "Bearer " || p.Key != "openai" || len(p.Paths) == 0 {
		t.Errorf("defaults not filled: %+v", p)
	}
}

func TestProviderAllows(t *testing.T) {
	p := Provider{Paths: []string{"/chat/completions", "/embeddings", "/models/"}}
	for path, want := range map[string]kind{
		"/chat/completions": kindGenerate, "/embeddings": kindEmbed, "/models/gpt": kindModels, "/models/": kindModels,
		"/chat/completions/x": kindNone, "/models": kindNone, "/files": kindNone, "/models/../files": kindNone,
		"/models/a%2f": kindNone, "": kindNone, "/": kindNone, "//chat/completions": kindNone,
	} {
		if got := p.allows(path); got != want {
			t.Errorf("allows(%q) = %v, want %v", path, got, want)
		}
	}
}

var limitTests = []struct {
	name, doc string
	ok        bool
}{
	{"default and users", `{"default":{"requests_per_minute":10},"users":{"alice":{"tokens_per_day":5}}}`, true},
	{"empty", `{}`, true},
	{"negative", `{"default":{"tokens_per_day":-1}}`, false},
	{"huge rpm", `{"default":{"requests_per_minute":2000000}}`, false},
	{"bad user", `{"users":{"Alice!":{}}}`, false},
	{"unknown field", `{"defaults":{}}`, false},
	{"trailing", `{} {}`, false},
	{"not json", `rpm=1`, false},
}

func TestParseLimits(t *testing.T) {
	for _, tt := range limitTests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseLimits([]byte(tt.doc)); (err == nil) != tt.ok {
				t.Fatalf("ParseLimits = %v; want ok=%v", err, tt.ok)
			}
		})
	}
	f, err := ParseLimits([]byte(limitTests[0].doc))
	if err != nil {
		t.Fatal(err)
	}
	base := Limits{RequestsPerMinute: 60, TokensPerDay: 1000}
	if got := f.For("alice", base); got != (Limits{RequestsPerMinute: 10, TokensPerDay: 5}) {
		t.Errorf("alice = %+v", got)
	}
	if got := f.For("bob", base); got != (Limits{RequestsPerMinute: 10, TokensPerDay: 1000}) {
		t.Errorf("bob = %+v", got)
	}
}

var meterTests = []struct {
	name  string
	sse   bool
	body  string
	total int64
}{
	{"json", false, `{"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`, 7},
	{"json without total", false, `{"usage":{"input_tokens":3,"output_tokens":4}}`, 7},
	{"json without usage", false, `{"choices":[]}`, 0},
	{"openai stream", true, "data: {\"choices\":[]}\n\ndata: {\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6,\"total_tokens\":11}}\n\ndata: [DONE]\n\n", 11},
	{"anthropic stream", true, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n", 25},
	{"responses stream", true, "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\",\"usage\":null}}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":8,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":9,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":17}}}\n\n", 17},
	{"crlf and no final newline", true, "data: {\"usage\":{\"total_tokens\":9}}\r\n\r\ndata: {\"usage\":{\"total_tokens\":12}}", 12},
	{"garbage", true, "data: {\"usage\":\ndata: nope\n", 0},
}

func TestMeter(t *testing.T) {
	for _, tt := range meterTests {
		t.Run(tt.name, func(t *testing.T) {
			// Fed in 3-byte pieces, as a stream may split it anywhere.
			m := meter{sse: tt.sse, maxDoc: 1 << 20}
			for b := []byte(tt.body); len(b) > 0; {
				n := min(3, len(b))
				m.write(b[:n])
				b = b[n:]
			}
			if got := m.done(); got.Total != tt.total {
				t.Errorf("total = %d, want %d (%+v)", got.Total, tt.total, got)
			}
		})
	}
}

// TestMeterPastItsCap: a JSON body past maxDoc keeps only its tail, and
// is counted by the last usage key there when it is the top-level one.
func TestMeterPastItsCap(t *testing.T) {
	pad := `"data":[` + strings.Repeat(`{"embedding":[0.1,0.2]},`, 20) + `{}]`
	for _, tt := range []struct {
		name, body string
		total      int64
	}{
		{"usage last", `{` + pad + `,"usage":{"prompt_tokens":3,"total_tokens":5}}`, 5},
		{"fields after usage", `{` + pad + `,"usage": {"total_tokens":5}, "service_tier":"default","meta":{"a":[1]}}`, 5},
		{"the string usage after the key", `{` + pad + `,"usage":{"total_tokens":5},"kind":"usage"}`, 5},
		{"usage first, cut off", `{"usage":{"total_tokens":5},` + pad + `}`, 0},
		{"nested usage", `{` + pad + `,"x":{"usage":{"total_tokens":5}}}`, 0},
		{"nested in an array", `{` + pad + `,"x":[{"usage":{"total_tokens":5}}]}`, 0},
		{"usage null", `{` + pad + `,"usage":null}`, 0},
		{"unfinished", `{` + pad + `,"usage":{"total_tokens":5}`, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := meter{maxDoc: 128}
			for b := []byte(tt.body); len(b) > 0; {
				n := min(7, len(b))
				m.write(b[:n])
				b = b[n:]
				if len(m.buf) > m.maxDoc {
					t.Fatalf("meter kept %d bytes", len(m.buf))
				}
			}
			if got := m.done(); got.Total != tt.total || m.buf != nil {
				t.Errorf("total = %d, want %d (%+v)", got.Total, tt.total, got)
			}
		})
	}
}
