package egress

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func FuzzParseProviders(f *testing.F) {
	for _, tt := range providerTests {
		f.Add([]byte(tt.doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		ps, err := ParseProviders(doc)
		if err != nil {
			return
		}
		for _, p := range ps {
			if err := p.validate(); err != nil {
				t.Fatalf("accepted provider fails validation: %v", err)
			}
			if _, err := p.upstream(); err != nil {
				t.Fatalf("accepted provider has no upstream: %v", err)
			}
		}
	})
}

func FuzzParseLimits(f *testing.F) {
	for _, tt := range limitTests {
		f.Add([]byte(tt.doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		lf, err := ParseLimits(doc)
		if err != nil {
			return
		}
		if l := lf.For("alice", Limits{}); l.RequestsPerMinute < 0 || l.TokensPerDay < 0 {
			t.Fatalf("negative limits accepted: %+v", l)
		}
	})
}

// FuzzMeter feeds provider responses (untrusted) through the usage meter
// in two pieces split anywhere: it must not panic, nor count negative
// tokens, nor keep more than its cap.
func FuzzMeter(f *testing.F) {
	for _, tt := range meterTests {
		f.Add([]byte(tt.body), tt.sse, uint(len(tt.body)/2))
	}
	f.Fuzz(func(t *testing.T, body []byte, sse bool, split uint) {
		m := meter{sse: sse, maxDoc: 256}
		i := int(split % uint(len(body)+1))
		m.write(body[:i])
		m.write(body[i:])
		if len(m.buf) > 256 {
			t.Fatalf("meter kept %d bytes", len(m.buf))
		}
		u := m.done()
		if u.Prompt < 0 || u.Completion < 0 || u.Total < 0 {
			t.Fatalf("negative counts: %+v", u)
		}
	})
}

// FuzzDecodeBody feeds request bodies (untrusted) to the decoder: what
// it accepts, encoding/json reads as the same object, with no key twice;
// its encoding decodes to the same encoding; and prepare never panics.
func FuzzDecodeBody(f *testing.F) {
	for _, tt := range bodyTests {
		f.Add([]byte(tt.body))
	}
	for _, tt := range prepareTests {
		f.Add([]byte(tt.body))
	}
	up := &upstream{Provider: Provider{MaxOutputTokens: DefaultMaxOutputTokens}}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, own := range []bool{false, true} {
			prepare(body, "/chat/completions", kindGenerate, up, own)
		}
		o, err := decodeBody(body)
		if err != nil {
			return
		}
		enc := o.encode()
		var viaStd, viaOurs any
		if err := json.Unmarshal(body, &viaStd); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", body, err)
		}
		if err := json.Unmarshal(enc, &viaOurs); err != nil {
			t.Fatalf("encoded %q as %q, which encoding/json refuses: %v", body, enc, err)
		}
		if !reflect.DeepEqual(viaStd, viaOurs) {
			t.Fatalf("%q reads as %v, its encoding %q as %v", body, viaStd, enc, viaOurs)
		}
		again, err := decodeBody(enc)
		if err != nil {
			t.Fatalf("encoding %q does not decode: %v", enc, err)
		}
		if e2 := again.encode(); !bytes.Equal(e2, enc) {
			t.Fatalf("encoding is not stable: %q then %q", enc, e2)
		}
	})
}

// FuzzParseBusyFor feeds an agent's busy lengths (untrusted): an accepted
// one is positive.
func FuzzParseBusyFor(f *testing.F) {
	for _, s := range []string{"30m", "1800", "1h30m", "0", "-5m", "", "9999999999999", "1e9", "soon"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseBusyFor(s); err == nil && d <= 0 {
			t.Fatalf("ParseBusyFor(%q) = %v, accepted", s, d)
		}
	})
}
