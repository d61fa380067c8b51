package fleet

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// apiServer reads the API server's own metrics.
type apiServer struct{ rest rest.Interface }

// apiFigures are the metrics the table is made of.
type apiFigures struct {
	cpuSeconds, rss float64
	// watches is the open WATCH requests; claimEvents the watch events
	// sent for SandboxClaims so far.
	watches, claimEvents float64
}

// read scrapes /metrics once.
func (a apiServer) read(ctx context.Context) (apiFigures, error) {
	body, err := a.rest.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiFigures{}, fmt.Errorf("read the API server's metrics: %w", err)
	}
	return parseFigures(body), nil
}

// parseFigures sums the samples of the figures' metrics in a Prometheus
// text exposition; lines it cannot read count nothing.
func parseFigures(body []byte) apiFigures {
	var f apiFigures
	s := bufio.NewScanner(bytes.NewReader(body))
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		name, labels, value, ok := sample(s.Text())
		if !ok {
			continue
		}
		switch {
		case name == "process_cpu_seconds_total":
			f.cpuSeconds += value
		case name == "process_resident_memory_bytes":
			f.rss += value
		case name == "apiserver_longrunning_requests" && strings.Contains(labels, `verb="WATCH"`):
			f.watches += value
		case name == "apiserver_watch_events_total" && (strings.Contains(labels, `resource="sandboxclaims"`) || strings.Contains(labels, `kind="SandboxClaim"`)):
			f.claimEvents += value
		}
	}
	return f
}

// sample splits one exposition line into its metric name, its labels
// (between the braces, unparsed) and its value.
func sample(line string) (name, labels string, value float64, ok bool) {
	if line == "" || line[0] == '#' {
		return "", "", 0, false
	}
	rest := ""
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return "", "", 0, false
		}
		name, labels, rest = line[:i], line[i+1:j], line[j+1:]
	} else {
		name, rest, _ = strings.Cut(line, " ")
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", "", 0, false
	}
	value, err := strconv.ParseFloat(fields[0], 64)
	return name, labels, value, err == nil
}
