package egress

import (
	"bytes"
	"encoding/json"
)

// TokenUsage is what a provider reported a call used.
type TokenUsage struct {
	Prompt     int64
	Completion int64
	Total      int64
}

// usageFields covers OpenAI's chat and completions names
// (prompt/completion/total_tokens), its Responses API's and Anthropic's
// (input/output_tokens, and total_tokens in the Responses API).
type usageFields struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
}

// merge keeps the largest count of each kind seen: OpenAI reports usage
// once, Anthropic's stream reports input first and the growing output
// count after.
func (u *TokenUsage) merge(f usageFields) {
	u.Prompt = max(u.Prompt, f.PromptTokens, f.InputTokens)
	u.Completion = max(u.Completion, f.CompletionTokens, f.OutputTokens)
	u.Total = max(u.Total, f.TotalTokens, u.Prompt+u.Completion)
}

// parseUsage reads the usage object of one JSON document (a response
// body, or one SSE event's data), at the top level, inside "message"
// (Anthropic's message_start) or inside "response" (the Responses API's
// response.completed). It reports whether it found one.
func parseUsage(doc []byte) (usageFields, bool) {
	type withUsage struct {
		Usage *usageFields `json:"usage"`
	}
	var d struct {
		withUsage
		Message  *withUsage `json:"message"`
		Response *withUsage `json:"response"`
	}
	if json.Unmarshal(doc, &d) != nil {
		return usageFields{}, false
	}
	switch {
	case d.Usage != nil:
		return *d.Usage, true
	case d.Message != nil && d.Message.Usage != nil:
		return *d.Message.Usage, true
	case d.Response != nil && d.Response.Usage != nil:
		return *d.Response.Usage, true
	}
	return usageFields{}, false
}

// meter watches a response body go by and collects its usage: an event
// stream line by line (data lines that mention usage), anything else as
// one JSON document kept up to maxDoc bytes. Past that only the
// document's tail is kept, where the providers put the top-level usage
// (after the choices, embeddings or output). It never holds the stream up.
type meter struct {
	sse    bool
	maxDoc int
	buf    []byte // the current SSE line, or the JSON document (its tail once over) so far
	over   bool   // the SSE line or the document outgrew maxDoc
	usage  TokenUsage
}

var (
	usageKey   = []byte(`"usage"`)
	dataPrefix = []byte("data:")
)

func (m *meter) write(p []byte) {
	if !m.sse {
		m.keepTail(p)
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(m.buf)+len(p) <= m.maxDoc {
				m.buf = append(m.buf, p...)
			} else {
				m.over = true
			}
			return
		}
		if !m.over && len(m.buf)+i <= m.maxDoc {
			m.buf = append(m.buf, p[:i]...)
			m.line(m.buf)
		}
		m.buf, m.over = m.buf[:0], false
		p = p[i+1:]
	}
}

// keepTail adds p to the document; once it outgrows maxDoc only its last
// maxDoc/2 bytes are kept, so each trim moves at most as many bytes as
// were added since the last one.
func (m *meter) keepTail(p []byte) {
	if len(m.buf)+len(p) <= m.maxDoc {
		m.buf = append(m.buf, p...)
		return
	}
	m.over = true
	keep := m.maxDoc / 2
	if len(p) >= keep {
		m.buf = append(m.buf[:0], p[len(p)-keep:]...)
		return
	}
	m.buf = append(m.buf[:0], m.buf[len(m.buf)+len(p)-keep:]...)
	m.buf = append(m.buf, p...)
}

func (m *meter) line(l []byte) {
	l = bytes.TrimSuffix(l, []byte("\r"))
	rest, ok := bytes.CutPrefix(l, dataPrefix)
	if !ok || !bytes.Contains(rest, usageKey) {
		return
	}
	if f, ok := parseUsage(bytes.TrimSpace(rest)); ok {
		m.usage.merge(f)
	}
}

// done finishes the count: the last SSE line without a newline, the whole
// JSON document, or the tail of one that outgrew maxDoc.
func (m *meter) done() TokenUsage {
	switch {
	case m.sse && !m.over && len(m.buf) > 0:
		m.line(m.buf)
	case !m.sse && !m.over && bytes.Contains(m.buf, usageKey):
		if f, ok := parseUsage(m.buf); ok {
			m.usage.merge(f)
		}
	case !m.sse && m.over:
		if f, ok := tailUsage(m.buf); ok {
			m.usage.merge(f)
		}
	}
	m.buf = nil
	return m.usage
}

// tailUsage reads the last "usage" key in the tail of a JSON document when
// its value is an object of the top-level object: what follows the value
// then closes exactly one object, as `{"x":0` + rest shows. An unescaped
// `"usage"` followed by ':' is always a key, wherever the tail starts.
func tailUsage(tail []byte) (usageFields, bool) {
	end := len(tail)
	for {
		i := bytes.LastIndex(tail[:end], usageKey)
		if i < 0 {
			return usageFields{}, false
		}
		rest, ok := bytes.CutPrefix(bytes.TrimLeft(tail[i+len(usageKey):], " \t\r\n"), []byte(":"))
		if !ok { // the string "usage", not a key
			end = i
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(rest))
		var f *usageFields
		if dec.Decode(&f) != nil || f == nil {
			return usageFields{}, false
		}
		if !json.Valid(append([]byte(`{"x":0`), rest[dec.InputOffset():]...)) {
			return usageFields{}, false
		}
		return *f, true
	}
}
