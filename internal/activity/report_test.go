package activity

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeReport(t *testing.T) {
	tests := []struct {
		name, body string
		ok         bool
	}{
		{"good", `{"node":"node-1","sent_at":1000,"entries":[{"namespace":"ns","sandbox":"dsh-pool-x","last_activity":900,"in_flight":1,"open_websockets":2}]}`, true},
		{"empty table", `{"node":"node-1","sent_at":1000,"entries":[]}`, true},
		{"unknown field", `{"node":"node-1","sent_at":1000,"entries":null,"extra":1}`, true},
		{"no node", `{"sent_at":1000,"entries":[]}`, false},
		{"bad node", `{"node":"Node 1","sent_at":1000}`, false},
		{"no sent_at", `{"node":"node-1"}`, false},
		{"bad namespace", `{"node":"n","sent_at":1,"entries":[{"namespace":"a/b","sandbox":"x"}]}`, false},
		{"bad sandbox", `{"node":"n","sent_at":1,"entries":[{"namespace":"ns","sandbox":"../x"}]}`, false},
		{"negative in flight", `{"node":"n","sent_at":1,"entries":[{"namespace":"ns","sandbox":"x","in_flight":-1}]}`, false},
		{"negative websockets", `{"node":"n","sent_at":1,"entries":[{"namespace":"ns","sandbox":"x","open_websockets":-1}]}`, false},
		{"model call and busy", `{"node":"n","sent_at":1000,"entries":[{"namespace":"ns","sandbox":"x","last_activity":900,"in_flight":1,"model_calls":1,"last_model_call":900,"busy_until":5000}]}`, true},
		{"more model calls than in flight", `{"node":"n","sent_at":1,"entries":[{"namespace":"ns","sandbox":"x","in_flight":1,"model_calls":2}]}`, false},
		{"negative model calls", `{"node":"n","sent_at":1,"entries":[{"namespace":"ns","sandbox":"x","model_calls":-1}]}`, false},
		{"negative busy", `{"node":"n","sent_at":1,"entries":[{"namespace":"ns","sandbox":"x","busy_until":-1}]}`, false},
		{"negative last model call", `{"node":"n","sent_at":1,"entries":[{"namespace":"ns","sandbox":"x","last_model_call":-1}]}`, false},
		{"not json", `node=n`, false},
		{"wrong type", `{"node":"n","sent_at":"1"}`, false},
		{"too large", `{"node":"n","sent_at":1,"entries":[` + strings.Repeat(" ", MaxReportBytes) + `]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeReport(strings.NewReader(tt.body))
			if tt.ok && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidReport) {
				t.Fatalf("got %v, want ErrInvalidReport", err)
			}
		})
	}
}

func FuzzDecodeReport(f *testing.F) {
	f.Add(`{"node":"node-1","sent_at":1000,"entries":[{"namespace":"ns","sandbox":"x","last_activity":900,"in_flight":1,"open_websockets":2}]}`)
	f.Add(`{"node":"n","sent_at":1,"entries":[{"namespace":"ns","sandbox":"x","in_flight":-1}]}`)
	f.Add(`{"node":"","sent_at":0}`)
	f.Fuzz(func(t *testing.T, body string) {
		rep, err := DecodeReport(strings.NewReader(body))
		if err != nil {
			if !errors.Is(err, ErrInvalidReport) {
				t.Fatalf("error %v is not ErrInvalidReport", err)
			}
			return
		}
		if rep.Node == "" || rep.SentAt <= 0 {
			t.Fatalf("accepted %+v", rep)
		}
		for _, e := range rep.Entries {
			if e.Namespace == "" || e.Sandbox == "" || e.InFlight < 0 || e.OpenWebSockets < 0 || e.LastActivity < 0 ||
				e.ModelCalls < 0 || e.ModelCalls > e.InFlight || e.LastModelCall < 0 || e.BusyUntil < 0 {
				t.Fatalf("accepted entry %+v", e)
			}
		}
	})
}
