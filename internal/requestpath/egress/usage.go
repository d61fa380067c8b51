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

// usageFields covers OpenAI (prompt/completion/total_tokens) and
// Anthropic (input/output_tokens) names.
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
// body, or one SSE event's data), at the top level or inside "message"
// (Anthropic's message_start). It reports whether it found one.
func parseUsage(doc []byte) (usageFields, bool) {
	var d struct {
		Usage   *usageFields `json:"usage"`
		Message *struct {
			Usage *usageFields `json:"usage"`
		} `json:"message"`
	}
	if json.Unmarshal(doc, &d) != nil {
		return usageFields{}, false
	}
	switch {
	case d.Usage != nil:
		return *d.Usage, true
	case d.Message != nil && d.Message.Usage != nil:
		return *d.Message.Usage, true
	}
	return usageFields{}, false
}

// meter watches a response body go by and collects its usage: an event
// stream line by line (data lines that mention usage), anything else as
// one JSON document kept up to maxDoc bytes. It never holds the stream up.
type meter struct {
	sse    bool
	maxDoc int
	buf    []byte // the current SSE line, or the JSON document so far
	over   bool   // the document outgrew maxDoc
	usage  TokenUsage
	found  bool
}

var (
	usageKey   = []byte(`"usage"`)
	dataPrefix = []byte("data:")
)

func (m *meter) write(p []byte) {
	if !m.sse {
		if m.over || len(m.buf)+len(p) > m.maxDoc {
			m.over, m.buf = true, nil
			return
		}
		m.buf = append(m.buf, p...)
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

func (m *meter) line(l []byte) {
	l = bytes.TrimSuffix(l, []byte("\r"))
	rest, ok := bytes.CutPrefix(l, dataPrefix)
	if !ok || !bytes.Contains(rest, usageKey) {
		return
	}
	if f, ok := parseUsage(bytes.TrimSpace(rest)); ok {
		m.usage.merge(f)
		m.found = true
	}
}

// done finishes the count: the last SSE line without a newline, or the
// whole JSON document.
func (m *meter) done() TokenUsage {
	switch {
	case m.sse && !m.over && len(m.buf) > 0:
		m.line(m.buf)
	case !m.sse && !m.over && bytes.Contains(m.buf, usageKey):
		if f, ok := parseUsage(m.buf); ok {
			m.usage.merge(f)
			m.found = true
		}
	}
	m.buf = nil
	return m.usage
}
