package egress

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// request is a POST body as the provider will get it, and what it
// reserves of its user's budget until its usage arrives.
type request struct {
	body    []byte
	reserve int64
}

// prepare decodes body once (decodeBody), applies the rules for a call to
// path (of kind k) at up, and encodes the result:
//   - on the shared key, fields that reach state the provider keeps for
//     the whole project are refused (storedState); a stored Responses API
//     call, the default there, is turned off with store: false;
//   - a streamed OpenAI-style completion asks for its usage
//     (stream_options.include_usage), so the stream's last event has it;
//   - the reservation is the body's length in bytes, more than its prompt
//     can be in tokens, plus for generation the output it may produce
//     (reservedOutput).
func prepare(body []byte, path string, k kind, up *upstream, ownKey bool) (request, error) {
	o, err := decodeBody(body)
	if err != nil {
		return request{}, err
	}
	last := path[strings.LastIndexByte(path, '/')+1:]
	if !ownKey {
		if err := storedState(o); err != nil {
			return request{}, err
		}
		if _, set := o.get("store"); last == "responses" && !set {
			o.set("store", false)
		}
	}
	if last == "completions" {
		if err := askStreamUsage(&o); err != nil {
			return request{}, err
		}
	}
	out := o.encode()
	r := request{body: out, reserve: int64(len(out))}
	if k == kindGenerate {
		r.reserve += reservedOutput(o, up.MaxOutputTokens)
	}
	return r, nil
}

// askStreamUsage sets stream_options.include_usage when the call streams.
func askStreamUsage(o *object) error {
	if v, _ := o.get("stream"); v != true {
		return nil
	}
	opts, _ := o.get("stream_options")
	switch so := opts.(type) {
	case nil:
		o.set("stream_options", object{{"include_usage", true}})
	case object:
		so.set("include_usage", true)
		o.set("stream_options", so)
	default:
		return badBody("stream_options must be an object")
	}
	return nil
}

// Fields that name state the provider keeps for the key's whole project:
// on the shared key, every tenant's. storedTop are refused at the top
// level when set (not null); storedIDs anywhere in the body when they
// hold an id (a string, or a list).
var (
	storedTop = []string{"previous_response_id", "conversation"}
	storedIDs = map[string]bool{"file_id": true, "file_ids": true, "vector_store_ids": true, "container": true}
)

// storedState refuses a body that would store a call, or read what is
// stored, on the shared key.
func storedState(o object) error {
	refuse := func(what string) error {
		return &refusal{errStoredState, what + " reaches what the provider stores for the shared key's whole project; it needs your own key (<key>.<user>)"}
	}
	if v, _ := o.get("store"); v == true {
		return refuse("store: true")
	}
	for _, k := range storedTop {
		if v, ok := o.get(k); ok && v != nil {
			return refuse(k)
		}
	}
	if name, found := findStoredID(o); found {
		return refuse(name)
	}
	return nil
}

// findStoredID looks through v for a key of storedIDs holding an id. One
// holding an object is not an id: a container given as {"type":"auto"}
// asks for a new one, and a tool's JSON schema may name a file_id
// property.
func findStoredID(v any) (string, bool) {
	switch v := v.(type) {
	case object:
		for _, m := range v {
			if storedIDs[m.key] {
				switch m.val.(type) {
				case string, []any:
					return m.key, true
				}
			}
			if k, found := findStoredID(m.val); found {
				return k, true
			}
		}
	case []any:
		for _, e := range v {
			if k, found := findStoredID(e); found {
				return k, true
			}
		}
	}
	return "", false
}

// maxChoices bounds n and best_of as OpenAI does.
const maxChoices = 128

// reservedOutput is the most a generation call may produce: the largest
// of max_tokens, max_completion_tokens and max_output_tokens it names, at
// most provider's maximum, which is also the figure for a call naming
// none, times the choices it asks for (n, best_of). A value that is not a
// positive integer counts as not named.
func reservedOutput(o object, maxOutput int64) int64 {
	out := int64(0)
	for _, k := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
		out = max(out, positive(o, k, maxOutput))
	}
	if out == 0 {
		out = maxOutput
	}
	choices := max(1, positive(o, "n", maxChoices), positive(o, "best_of", maxChoices))
	return out * choices
}

// positive is o's integer field k when it is positive, capped at limit; 0
// otherwise.
func positive(o object, k string, limit int64) int64 {
	v, _ := o.get(k)
	num, ok := v.(json.Number)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || n < 1 {
		return 0
	}
	return min(n, limit)
}

// refusal is a refusal of something in the sandbox's own request, with a
// message the sandbox gets: kind is the sentinel refuse maps to a status.
type refusal struct {
	kind error
	msg  string
}

func (r *refusal) Error() string { return fmt.Sprintf("%v: %s", r.kind, r.msg) }
func (r *refusal) Unwrap() error { return r.kind }

func badBody(msg string) error { return &refusal{errBadBody, msg} }
