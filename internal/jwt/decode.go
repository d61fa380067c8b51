package jwt

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Decoded is the unverified content of a compact JWS, for display only.
type Decoded struct {
	// Header is the JOSE header as sent.
	Header json.RawMessage
	// Payload is the claims segment as sent.
	Payload json.RawMessage
	// Alg and KID are read from the header; empty when absent or not strings.
	Alg, KID string
}

// Decode splits token and decodes its header and payload without checking
// anything else. Nothing it returns may be trusted; tools such as `jwt
// inspect` print it next to the verdict of a Verifier. It fails with
// ErrMalformed on anything that is not three base64url segments whose first
// two are JSON objects.
func Decode(token string) (Decoded, error) {
	if len(token) > maxTokenLen {
		return Decoded{}, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxTokenLen)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Decoded{}, fmt.Errorf("%w: %d segments, want 3", ErrMalformed, len(parts))
	}
	var d Decoded
	for i, dst := range []*json.RawMessage{&d.Header, &d.Payload} {
		raw, err := base64.RawURLEncoding.Strict().DecodeString(parts[i])
		if err != nil {
			return Decoded{}, fmt.Errorf("%w: segment %d is not unpadded base64url", ErrMalformed, i)
		}
		raw = bytes.TrimSpace(raw)
		if !json.Valid(raw) || len(raw) == 0 || raw[0] != '{' {
			return Decoded{}, fmt.Errorf("%w: segment %d is not a JSON object", ErrMalformed, i)
		}
		*dst = raw
	}
	var h map[string]any
	if err := json.Unmarshal(d.Header, &h); err != nil {
		return Decoded{}, fmt.Errorf("%w: header: %w", ErrMalformed, err)
	}
	d.Alg, _ = h["alg"].(string)
	d.KID, _ = h["kid"].(string)
	return d, nil
}
