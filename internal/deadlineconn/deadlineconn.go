// Package deadlineconn gives every read or write on a connection a deadline
// of its own, so a peer that stops sending or stops reading is dropped after
// a timeout while a long transfer that keeps moving is never cut off.
package deadlineconn

import (
	"net"
	"sync/atomic"
	"time"
)

// Conn is a connection whose each Read must make progress within readIdle
// and each Write within writeTimeout; a zero duration sets no deadline in
// that direction.
type Conn struct {
	net.Conn
	readIdle, writeTimeout time.Duration
	read, write            Deadline
}

// New wraps c.
func New(c net.Conn, readIdle, writeTimeout time.Duration) *Conn {
	return &Conn{Conn: c, readIdle: readIdle, writeTimeout: writeTimeout}
}

// Read reads with a deadline readIdle from now (renewed as Deadline says).
func (c *Conn) Read(b []byte) (int, error) {
	if c.readIdle > 0 {
		c.read.Extend(c.Conn.SetReadDeadline, c.readIdle)
	}
	return c.Conn.Read(b)
}

// Write writes with a deadline writeTimeout from now (renewed as Deadline
// says).
func (c *Conn) Write(b []byte) (int, error) {
	if c.writeTimeout > 0 {
		c.write.Extend(c.Conn.SetWriteDeadline, c.writeTimeout)
	}
	return c.Conn.Write(b)
}

// Deadline moves one direction of a connection's deadline to timeout from
// now before each read or write, but only once the last one set has used
// up a sixteenth of timeout: an I/O still gets between 15/16 of timeout
// and all of it, and a busy connection resets its timer a few times per
// timeout instead of at every call. The zero value is ready to use.
type Deadline struct {
	renewAt atomic.Int64 // Unix nanoseconds
}

// Extend sets the deadline with set when it is due for renewal.
func (d *Deadline) Extend(set func(time.Time) error, timeout time.Duration) {
	now := time.Now()
	if now.UnixNano() < d.renewAt.Load() {
		return
	}
	set(now.Add(timeout))
	d.renewAt.Store(now.Add(timeout / 16).UnixNano())
}
