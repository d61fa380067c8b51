package activity

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Limits DecodeReport enforces on a report.
const (
	// MaxReportBytes bounds a report's JSON body.
	MaxReportBytes = 8 << 20
	// MaxReportEntries bounds the entries of one report.
	MaxReportEntries = 50000
)

// JWKSVersionHeader is on the auth API's answers to reports: the
// jwt.JWKSVersion of the JWKS it serves, so that a node proxy holding
// another version fetches the JWKS again at once (after a key reset, say).
const JWKSVersionHeader = "X-Sandgate-JWKS-Version"

// ErrInvalidReport means a report body is malformed or out of bounds.
var ErrInvalidReport = errors.New("invalid activity report")

// Report is one node's activity table, as the Reporter posts it (JSON).
// Times are unix milliseconds on the node's clock; the leader only uses
// differences to SentAt, so clock skew between nodes does not matter.
type Report struct {
	// Node is the reporting node's name.
	Node string `json:"node"`
	// SentAt is when the report was built.
	SentAt int64 `json:"sent_at"`
	// Entries is the node's table; a sandbox missing from it has no open
	// work on that node.
	Entries []Entry `json:"entries"`
}

// Entry is one sandbox's activity on one node.
type Entry struct {
	Namespace string `json:"namespace"`
	// Sandbox is the Sandbox object's name.
	Sandbox string `json:"sandbox"`
	// LastActivity is the time of the last traffic, unix milliseconds.
	LastActivity int64 `json:"last_activity"`
	// InFlight counts HTTP requests in progress, SSE streams included.
	InFlight int64 `json:"in_flight"`
	// OpenWebSockets counts WebSockets open, silent or not.
	OpenWebSockets int64 `json:"open_websockets"`
	// ModelCalls counts the model calls in flight through the egress
	// listener; they are counted in InFlight too, so a leader that does
	// not know this field still keeps the sandbox awake.
	ModelCalls int64 `json:"model_calls,omitempty"`
	// LastModelCall is the time a model call last started or ended, unix
	// milliseconds; 0: none.
	LastModelCall int64 `json:"last_model_call,omitempty"`
	// BusyUntil is the time the agent said it is busy until, unix
	// milliseconds; 0: it has not, or said it is done.
	BusyUntil int64 `json:"busy_until,omitempty"`
	// ModelTokens is how many model tokens the sandbox's user has used
	// through this node's egress listener on UTC day ModelTokensDay (days
	// since 1970-01-01); 0: none that day.
	ModelTokens    int64 `json:"model_tokens,omitempty"`
	ModelTokensDay int64 `json:"model_tokens_day,omitempty"`
}

// Key returns the entry's sandbox key.
func (e Entry) Key() Key { return Key{Namespace: e.Namespace, Name: e.Sandbox} }

// DecodeReport reads one report from r (at most MaxReportBytes) and checks
// it, for the auth API's report endpoint. Errors wrap ErrInvalidReport.
func DecodeReport(r io.Reader) (Report, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxReportBytes+1))
	if err != nil {
		return Report{}, fmt.Errorf("%w: read: %w", ErrInvalidReport, err)
	}
	if len(data) > MaxReportBytes {
		return Report{}, fmt.Errorf("%w: larger than %d bytes", ErrInvalidReport, MaxReportBytes)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return Report{}, fmt.Errorf("%w: %w", ErrInvalidReport, err)
	}
	if err := rep.Validate(); err != nil {
		return Report{}, err
	}
	return rep, nil
}

// Validate checks names, counts and bounds; errors wrap ErrInvalidReport.
func (r Report) Validate() error {
	if len(validation.IsDNS1123Subdomain(r.Node)) > 0 {
		return fmt.Errorf("%w: node name", ErrInvalidReport)
	}
	if r.SentAt <= 0 {
		return fmt.Errorf("%w: sent_at", ErrInvalidReport)
	}
	if len(r.Entries) > MaxReportEntries {
		return fmt.Errorf("%w: more than %d entries", ErrInvalidReport, MaxReportEntries)
	}
	for i, e := range r.Entries {
		switch {
		case len(validation.IsDNS1123Label(e.Namespace)) > 0:
			return fmt.Errorf("%w: entry %d: namespace", ErrInvalidReport, i)
		case len(validation.IsDNS1123Subdomain(e.Sandbox)) > 0:
			return fmt.Errorf("%w: entry %d: sandbox name", ErrInvalidReport, i)
		case e.LastActivity < 0 || e.InFlight < 0 || e.OpenWebSockets < 0 || e.ModelCalls < 0 || e.LastModelCall < 0 || e.BusyUntil < 0:
			return fmt.Errorf("%w: entry %d: negative value", ErrInvalidReport, i)
		case e.ModelCalls > e.InFlight:
			return fmt.Errorf("%w: entry %d: more model calls than requests in flight", ErrInvalidReport, i)
		}
	}
	return nil
}
