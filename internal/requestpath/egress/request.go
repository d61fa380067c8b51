package egress

import (
	"bytes"
	"encoding/json"
)

var streamKey = []byte(`"stream"`)

// definesStreamUsage reports whether path (below a provider's base URL)
// is an OpenAI-style completions API, /chat/completions or /completions
// of DefaultOpenAIPaths: the ones that define stream_options.include_usage
// and report a stream's usage only when asked. A provider speaks that API
// when it allows one of these paths; elsewhere the option is unknown
// (Anthropic's /messages refuses unknown fields) or not defined
// (/responses ends every stream with its usage), so bodies go on as sent.
func definesStreamUsage(path string) bool {
	return path == "/chat/completions" || path == "/completions"
}

// withStreamUsage asks a streamed OpenAI-style completion to report its
// usage in the last event (stream_options.include_usage), so streamed
// calls are counted too. Any other body comes back unchanged.
func withStreamUsage(body []byte) []byte {
	if !bytes.Contains(body, streamKey) {
		return body
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return body
	}
	var stream bool
	if json.Unmarshal(doc["stream"], &stream) != nil || !stream {
		return body
	}
	var opts map[string]json.RawMessage
	if raw, ok := doc["stream_options"]; ok && json.Unmarshal(raw, &opts) != nil {
		return body
	}
	if opts == nil { // absent or null
		opts = map[string]json.RawMessage{}
	}
	opts["include_usage"] = json.RawMessage("true")
	raw, err := json.Marshal(opts)
	if err != nil {
		return body
	}
	doc["stream_options"] = raw
	out, err := json.Marshal(doc)
	if err != nil {
		return body
	}
	return out
}
