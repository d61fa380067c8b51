package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// maxBodyDepth bounds the nesting of a request body: a model call nests a
// few levels (a message's content parts, a tool's schema); the decoder's
// own bound is 10,000.
const maxBodyDepth = 64

// A request body is decoded once into these values and encoded again from
// them, so the provider reads exactly what the proxy checked: object,
// []any, string, json.Number (the number as written), bool and nil.
type (
	// object keeps its members in the order they came.
	object []member
	member struct {
		key string
		val any
	}
)

// get returns the value of key and whether o has it.
func (o object) get(key string) (any, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// set replaces the value of key, or adds key at the end.
func (o *object) set(key string, val any) {
	for i := range *o {
		if (*o)[i].key == key {
			(*o)[i].val = val
			return
		}
	}
	*o = append(*o, member{key, val})
}

// decodeBody reads a request body that must be one JSON object in valid
// UTF-8 with no key twice in any object, however spelled ("stream" and
// "\u0073tream" are one key), and no deeper than maxBodyDepth. Such a body
// means the same to every parser; anything else is refused, wrapped in
// errBadBody with a message for the sandbox.
func decodeBody(body []byte) (object, error) {
	if !utf8.Valid(body) {
		return nil, badBody("the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, badBody("the body must be one JSON object")
	}
	o, err := decodeObject(dec, 1)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badBody("trailing data after the JSON object")
	}
	return o, nil
}

func decodeObject(dec *json.Decoder, depth int) (object, error) {
	o := object{}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err)
		}
		key, _ := tok.(string) // the decoder allows only strings here
		if seen[key] {
			return nil, badBody(fmt.Sprintf("duplicate key %q", key))
		}
		seen[key] = true
		v, err := decodeValue(dec, depth)
		if err != nil {
			return nil, err
		}
		o = append(o, member{key, v})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, syntaxError(err)
	}
	return o, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(err)
	}
	if n, isNumber := tok.(json.Number); isNumber {
		// A number no float64 holds reads differently, or not at all, at
		// the provider: refuse it rather than guess.
		if _, err := n.Float64(); err != nil {
			return nil, badBody(fmt.Sprintf("number %.40s is out of range", n))
		}
		return n, nil
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		return tok, nil
	}
	if depth++; depth > maxBodyDepth {
		return nil, badBody(fmt.Sprintf("nested deeper than %d levels", maxBodyDepth))
	}
	if d == '{' {
		return decodeObject(dec, depth)
	}
	a := []any{}
	for dec.More() {
		v, err := decodeValue(dec, depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
	}
	if _, err := dec.Token(); err != nil { // ']'
		return nil, syntaxError(err)
	}
	return a, nil
}

func syntaxError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return badBody(fmt.Sprintf("not JSON at byte %d", se.Offset))
	}
	return badBody("not JSON: the body ends early")
}

// encode writes o as compact JSON: members in their order, strings with
// only the escapes JSON requires, numbers as they were written.
func (o object) encode() []byte {
	return appendValue(make([]byte, 0, 1024), o)
}

func appendValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case object:
		b = append(b, '{')
		for i, m := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, m.key)
			b = append(b, ':')
			b = appendValue(b, m.val)
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, e)
		}
		return append(b, ']')
	case string:
		return appendString(b, v)
	case json.Number:
		return append(b, v...)
	case bool:
		return strconv.AppendBool(b, v)
	}
	return append(b, "null"...)
}

const hexDigits = "0123456789abcdef"

// appendString quotes s, valid UTF-8, escaping '"', '\\' and control
// characters only.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
