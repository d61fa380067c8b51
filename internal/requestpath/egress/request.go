package egress

import (
	"bytes"
	"encoding/json"
)

var streamKey = []byte(`"stream"`)

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
	opts := map[string]json.RawMessage{}
	if raw, ok := doc["stream_options"]; ok && json.Unmarshal(raw, &opts) != nil {
		return body
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
