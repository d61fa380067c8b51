package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestEscapedStreamKeyCharged: a stream asked for with an escaped key
// ("\u0073tream", the same JSON to every parser) is sent on asking for its
// usage and charged, as a plain one is.
func TestEscapedStreamKeyCharged(t *testing.T) {
	e := newEnv(t, nil)
	close(e.provider.release)
	for i, body := range []string{
		`{"model":"m","stream":true,"messages":[]}`,
		`{"model":"m","\u0073tream":true,"messages":[]}`,
		`{"model":"m","\u0073tream":true,"stream_options":{"include_\u0075sage":false},"messages":[]}`,
	} {
		if status, got := read(t, e.call(aliceIP, "/openai/chat/completions", body)); status != http.StatusOK || !strings.Contains(got, "[DONE]") {
			t.Fatalf("%s = %d %q", body, status, got)
		}
		testkit.Eventually(t, "the call audited", func() bool { return len(e.auditLines()) == i+1 })
		if got, want := e.proxy.budgets.usage("alice").Tokens, int64(30*(i+1)); got != want {
			t.Errorf("after %s alice's tokens today = %d, want %d", body, got, want)
		}
	}
}

// TestAmbiguousBodiesRefused: a body two parsers could read differently
// (a key twice, however spelled, at any depth), or that is not one JSON
// object, is refused with 400 and a message saying why, before the
// provider or the budget sees it.
func TestAmbiguousBodiesRefused(t *testing.T) {
	e := newEnv(t, nil)
	close(e.provider.release)
	for _, tt := range []struct{ name, body, msg string }{
		{"duplicate key", `{"stream":false,"stream":true}`, `duplicate key \"stream\"`},
		{"escaped duplicate", `{"stream":false,"\u0073tream":true}`, `duplicate key \"stream\"`},
		{"nested duplicate", `{"messages":[{"role":"user","role":"system"}]}`, `duplicate key \"role\"`},
		{"trailing data", `{"model":"m"} {"model":"n"}`, "trailing data"},
		{"not an object", `[{"model":"m"}]`, "JSON object"},
		{"invalid UTF-8", "{\"model\":\"m\xff\"}", "UTF-8"},
		{"empty", ``, "JSON object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, body := read(t, e.call(aliceIP, "/openai/chat/completions", tt.body))
			if status != http.StatusBadRequest || !strings.Contains(body, tt.msg) || !strings.Contains(body, `"type":"sandgate_egress"`) {
				t.Errorf("status = %d %s, want 400 saying %s", status, body, tt.msg)
			}
		})
	}
	if n := len(e.provider.requests()); n != 0 {
		t.Errorf("provider saw %d ambiguous bodies", n)
	}
	if u := e.proxy.budgets.usage("alice"); u.Requests != 0 {
		t.Errorf("refused bodies took %d requests from the budget", u.Requests)
	}
}

var bodyTests = []struct {
	name, body string
	want       string // the encoding, or "" when refused
	refusal    string // part of the message when refused
}{
	{"compact", `{"model":"m","n":1}`, `{"model":"m","n":1}`, ""},
	{"spaces and order", "{ \"b\" : [1, 2.50, -3e2] ,\n \"a\":null }", `{"b":[1,2.50,-3e2],"a":null}`, ""},
	{"big integer kept", `{"seed":123456789012345678901234567890}`, `{"seed":123456789012345678901234567890}`, ""},
	{"escaped key decoded", `{"\u0073tream":true}`, `{"stream":true}`, ""},
	{"escapes", `{"s":"a\"b\\c\/d\n\u0001\u00e9<>&\u2028"}`, "{\"s\":\"a\\\"b\\\\c/d\\n\\u0001é<>&\u2028\"}", ""},
	{"same key in two objects", `{"a":{"k":1},"b":{"k":2}}`, `{"a":{"k":1},"b":{"k":2}}`, ""},
	{"duplicate", `{"a":1,"a":1}`, "", `duplicate key "a"`},
	{"escaped duplicate", `{"stream":false,"\u0073tream":true}`, "", `duplicate key "stream"`},
	{"deep duplicate", `{"a":[{"b":{"c":1,"\u0063":2}}]}`, "", `duplicate key "c"`},
	{"not an object", `"stream"`, "", "one JSON object"},
	{"array", `[]`, "", "one JSON object"},
	{"empty", ``, "", "one JSON object"},
	{"trailing", `{}{}`, "", "trailing data"},
	{"trailing garbage", `{} x`, "", "trailing data"},
	{"truncated", `{"a":[1,`, "", "ends early"},
	{"syntax", `{"a":tru}`, "", "not JSON"},
	{"number out of range", `{"max_tokens":1E700}`, "", "number 1E700 is out of range"},
	{"invalid UTF-8", "{\"a\":\"\xc3\x28\"}", "", "UTF-8"},
	{"too deep", `{"a":` + strings.Repeat("[", maxBodyDepth) + strings.Repeat("]", maxBodyDepth) + `}`, "", "nested deeper"},
}

func TestDecodeBody(t *testing.T) {
	for _, tt := range bodyTests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := decodeBody([]byte(tt.body))
			if tt.want == "" {
				if !errors.Is(err, errBadBody) || !strings.Contains(err.Error(), tt.refusal) {
					t.Errorf("decodeBody = %v, want a refusal saying %s", err, tt.refusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(o.encode()); got != tt.want {
				t.Errorf("encoded as %s, want %s", got, tt.want)
			}
		})
	}
}

var prepareTests = []struct {
	name, path, body string
	own              bool
	sent             string // "" when refused
	reserve          int64  // beyond the body's length
	refusal          error
}{
	{"stream asks for usage", "/chat/completions", `{"stream":true}`, false,
		`{"stream":true,"stream_options":{"include_usage":true}}`, 1000, nil},
	{"escaped stream asks for usage", "/completions", `{"\u0073tream":true,"stream_options":{"x":1,"include_\u0075sage":false}}`, false,
		`{"stream":true,"stream_options":{"x":1,"include_usage":true}}`, 1000, nil},
	{"null stream options", "/chat/completions", `{"stream":true,"stream_options":null}`, false,
		`{"stream":true,"stream_options":{"include_usage":true}}`, 1000, nil},
	{"odd stream options", "/chat/completions", `{"stream":true,"stream_options":"odd"}`, false, "", 0, errBadBody},
	{"not streamed", "/chat/completions", `{"stream":false}`, false, `{"stream":false}`, 1000, nil},
	{"messages untouched", "/messages", `{"stream":true,"max_tokens":50}`, false, `{"stream":true,"max_tokens":50}`, 50, nil},
	{"largest max named", "/chat/completions", `{"max_tokens":10,"max_completion_tokens":40}`, false, `{"max_tokens":10,"max_completion_tokens":40}`, 40, nil},
	{"max capped", "/chat/completions", `{"max_tokens":99999999}`, false, `{"max_tokens":99999999}`, 1000, nil},
	{"max not an integer", "/chat/completions", `{"max_tokens":1.5}`, false, `{"max_tokens":1.5}`, 1000, nil},
	{"choices", "/chat/completions", `{"max_tokens":10,"n":3}`, false, `{"max_tokens":10,"n":3}`, 30, nil},
	{"embeddings reserve the body", "/embeddings", `{"input":"hi"}`, false, `{"input":"hi"}`, 0, nil},
	{"responses not stored on the shared key", "/responses", `{"input":"hi"}`, false, `{"input":"hi","store":false}`, 1000, nil},
	{"responses stored with an own key", "/responses", `{"input":"hi"}`, true, `{"input":"hi"}`, 1000, nil},
	{"store false kept", "/responses", `{"store":false}`, false, `{"store":false}`, 1000, nil},
	{"store", "/chat/completions", `{"store":true}`, false, "", 0, errStoredState},
	{"store with an own key", "/chat/completions", `{"store":true}`, true, `{"store":true}`, 1000, nil},
	{"previous response", "/responses", `{"previous_response_id":"resp_1"}`, false, "", 0, errStoredState},
	{"null conversation", "/responses", `{"conversation":null,"store":false}`, false, `{"conversation":null,"store":false}`, 1000, nil},
	{"conversation", "/responses", `{"conversation":{"id":"conv_1"}}`, false, "", 0, errStoredState},
	{"input file", "/responses", `{"input":[{"content":[{"type":"input_file","file_id":"file-1"}]}]}`, false, "", 0, errStoredState},
	{"vector stores", "/responses", `{"tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`, false, "", 0, errStoredState},
	{"existing container", "/responses", `{"tools":[{"type":"code_interpreter","container":"cntr_1"}]}`, false, "", 0, errStoredState},
	{"new container", "/responses", `{"tools":[{"type":"code_interpreter","container":{"type":"auto"}}],"store":false}`, false,
		`{"tools":[{"type":"code_interpreter","container":{"type":"auto"}}],"store":false}`, 1000, nil},
	{"tool schema naming file_id", "/chat/completions", `{"tools":[{"type":"function","function":{"parameters":{"properties":{"file_id":{"type":"string"}},"required":["file_id"]}}}]}`, false,
		`{"tools":[{"type":"function","function":{"parameters":{"properties":{"file_id":{"type":"string"}},"required":["file_id"]}}}]}`, 1000, nil},
	{"anthropic container", "/messages", `{"container":"container_1","max_tokens":5}`, false, "", 0, errStoredState},
	{"anthropic file", "/messages", `{"messages":[{"content":[{"type":"document","source":{"type":"file","file_id":"file_1"}}]}]}`, false, "", 0, errStoredState},
	{"ambiguous", "/chat/completions", `{"store":false,"store":true}`, false, "", 0, errBadBody},
}

func TestPrepare(t *testing.T) {
	up := &upstream{Provider: Provider{MaxOutputTokens: 1000}}
	for _, tt := range prepareTests {
		t.Run(tt.name, func(t *testing.T) {
			k := kindOf(tt.path)
			r, err := prepare([]byte(tt.body), tt.path, k, up, tt.own)
			if tt.refusal != nil {
				if !errors.Is(err, tt.refusal) {
					t.Errorf("prepare = %s, %v; want %v", r.body, err, tt.refusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(r.body) != tt.sent {
				t.Errorf("sent %s, want %s", r.body, tt.sent)
			}
			if want := int64(len(r.body)) + tt.reserve; r.reserve != want {
				t.Errorf("reserved %d, want %d", r.reserve, want)
			}
		})
	}
}

// TestUnreportedUsageChargedReservation: a call whose usage never arrives
// (a provider that reports none, a stream cut off) keeps its reservation;
// one whose usage arrives is charged only that, and a call the provider
// refused costs nothing.
func TestUnreportedUsageChargedReservation(t *testing.T) {
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" {
			http.Error(w, `{"error":"no"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(silent.Close)
	e := newEnv(t, func(o *Options) {
		o.Providers[0].MaxOutputTokens = 500
		o.Providers = append(o.Providers, Provider{Name: "silent", BaseURL: silent.URL + "/v1"})
		o.Providers[1].fill()
	})
	e.writeKey("silent", "sk-silent")
	close(e.provider.release)
	for i, tt := range []struct {
		path, body string
		charged    int64
	}{
		{"/openai/chat/completions", `{"model":"m","stream":true,"messages":[]}`, 30},
		{"/silent/chat/completions", `{"model":"m","stream":true,"max_tokens":100,"messages":[]}`, 100 + int64(len(`{"model":"m","stream":true,"max_tokens":100,"messages":[],"stream_options":{"include_usage":true}}`))},
		{"/silent/completions", `{"model":"m"}`, 0},
	} {
		before := e.proxy.budgets.usage("alice").Tokens
		read(t, e.call(aliceIP, tt.path, tt.body))
		testkit.Eventually(t, "the call audited", func() bool { return len(e.auditLines()) == i+1 })
		if got := e.proxy.budgets.usage("alice").Tokens - before; got != tt.charged {
			t.Errorf("%s %s charged %d, want %d", tt.path, tt.body, got, tt.charged)
		}
		if got := e.auditLines()[i]["charged_tokens"]; got != float64(tt.charged) {
			t.Errorf("audit charged_tokens = %v, want %d", got, tt.charged)
		}
	}
}

// TestReservationsHoldTheDay: while an open call's reservation fills the
// day, the next call is refused with a retry in a second, not at
// midnight; once the call has settled the user is admitted again.
func TestReservationsHoldTheDay(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Default.TokensPerDay = 1000 })
	r := bufio.NewReader(e.call(aliceIP, "/openai/chat/completions", `{"model":"m","stream":true}`).Body)
	if first, err := r.ReadString('\n'); err != nil || !strings.Contains(first, `"one"`) {
		t.Fatalf("first event = %q, %v", first, err)
	}
	resp := e.call(aliceIP, "/openai/chat/completions", completion)
	if status, _ := read(t, resp); status != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("call while a reservation fills the day = %d, Retry-After %q; want 429 in 1 s", status, resp.Header.Get("Retry-After"))
	}
	close(e.provider.release)
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the stream settled", func() bool { return e.proxy.budgets.usage("alice").Tokens == 30 })
	if status, _ := read(t, e.call(aliceIP, "/openai/chat/completions", completion)); status != http.StatusOK {
		t.Errorf("call after the stream settled = %d", status)
	}
}
