// Package defaults fills the zero fields of an Options struct with their
// defaults, one line per field, so that each New reads as a list.
package defaults

import "time"

// Set sets *field to def when *field is its type's zero value.
func Set[T comparable](field *T, def T) {
	var zero T
	if *field == zero {
		*field = def
	}
}

// Clock sets *now to time.Now when it is nil: the one default of every
// Options' Now, which tests replace with a fake clock.
func Clock(now *func() time.Time) {
	if *now == nil {
		*now = time.Now
	}
}
