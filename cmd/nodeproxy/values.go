package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Flag values that environment variables set too.
type (
	strVal  string
	intVal  int
	boolVal bool
	durVal  time.Duration
)

func (v *strVal) String() string     { return string(*v) }
func (v *strVal) Set(s string) error { *v = strVal(s); return nil }

func (v *intVal) String() string { return strconv.Itoa(int(*v)) }
func (v *intVal) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("not an integer")
	}
	*v = intVal(n)
	return nil
}

func (v *boolVal) String() string { return strconv.FormatBool(bool(*v)) }
func (v *boolVal) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("not a boolean")
	}
	*v = boolVal(b)
	return nil
}

// IsBoolFlag lets --flag stand for --flag=true.
func (v *boolVal) IsBoolFlag() bool { return true }

func (v *durVal) String() string { return time.Duration(*v).String() }

// Set accepts Go durations ("90s") or bare seconds ("90"), as the seed's
// variables are written.
func (v *durVal) Set(s string) error {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		*v = durVal(time.Duration(n) * time.Second)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration")
	}
	*v = durVal(d)
	return nil
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
