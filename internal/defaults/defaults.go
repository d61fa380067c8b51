// Package defaults fills the zero fields of an Options struct with their
// defaults, one line per field, so that each New reads as a list.
package defaults

// Set sets *field to def when *field is its type's zero value.
func Set[T comparable](field *T, def T) {
	var zero T
	if *field == zero {
		*field = def
	}
}
