package egress

import (
	"fmt"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// busyPath is where an agent says it is busy (POST ?for=<duration>) or
// done (DELETE), identified by its source address as its model calls are.
// Provider names start with a letter, so no provider path is shadowed.
const busyPath = "/_sandgate/busy"

// maxBusyParam bounds the for parameter: a duration is a few characters.
const maxBusyParam = 32

// serveBusy takes a busy declaration: it is not a model call, so no budget
// or provider is involved. The answer says until when the declaration
// stands, after any cut to BusyMax.
func (p *Proxy) serveBusy(ctx *fasthttp.RequestCtx, c *call) {
	c.path, c.busy = busyPath, true
	defer p.finish(c)
	caller, err := p.opts.Callers.ByIP(c.client)
	if err != nil {
		p.refuse(ctx, c, err)
		return
	}
	c.caller = caller
	if p.opts.Activity == nil {
		p.refuse(ctx, c, fmt.Errorf("%w: %s (no activity tracking)", errBadPath, busyPath))
		return
	}
	var until time.Time
	switch m := string(ctx.Method()); m {
	case fasthttp.MethodPost:
		d, err := ParseBusyFor(string(ctx.QueryArgs().Peek("for")))
		if err != nil {
			p.refuse(ctx, c, err)
			return
		}
		until = p.opts.Now().Add(min(d, p.opts.BusyMax))
	case fasthttp.MethodDelete:
	default:
		p.refuse(ctx, c, fmt.Errorf("%w: %s %s", errBadMethod, m, busyPath))
		return
	}
	p.opts.Activity.Busy(p.activityKey(c), until)
	c.busyUntil = until
	ctx.Response.Header.SetContentType("application/json")
	b := append(make([]byte, 0, 96), `{"busy_until":`...)
	if until.IsZero() {
		b = append(b, "null"...)
	} else {
		b = appendString(b, until.UTC().Format(time.RFC3339))
	}
	b = append(b, `,"max_seconds":`...)
	b = strconv.AppendInt(b, int64(p.opts.BusyMax/time.Second), 10)
	ctx.Write(append(b, '}'))
}

// ParseBusyFor reads a busy declaration's length: a Go duration ("90m",
// "1h30m") or whole seconds ("5400"), positive. A length past BusyMax is
// not an error: serveBusy cuts it.
func ParseBusyFor(s string) (time.Duration, error) {
	if s == "" || len(s) > maxBusyParam {
		return 0, fmt.Errorf("%w: give for=<duration>, such as for=30m or for=1800", errBadBusy)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		n, nerr := strconv.ParseInt(s, 10, 64)
		if nerr != nil || n > int64(365*24*time.Hour/time.Second) {
			return 0, fmt.Errorf("%w: for=%q is not a duration", errBadBusy, s)
		}
		d = time.Duration(n) * time.Second
	}
	if d <= 0 {
		return 0, fmt.Errorf("%w: for must be positive", errBadBusy)
	}
	return d, nil
}
