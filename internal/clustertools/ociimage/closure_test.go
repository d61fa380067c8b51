package ociimage

import (
	"os"
	"testing"
)

// TestHostClosureCarriesLoaderAndLibraries builds the closure of Debian's
// ipset, a program that needs its own library and the C library.
func TestHostClosureCarriesLoaderAndLibraries(t *testing.T) {
	const ipset = "/usr/sbin/ipset"
	if _, err := os.Stat(ipset); err != nil {
		t.Skipf("needs Debian's ipset (apt-get install ipset): %v", err)
	}
	files, err := HostClosure([]string{ipset}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]File{}
	for _, f := range files {
		got[f.Path] = f
	}
	for _, want := range []string{ipset, "/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libipset.so.13", "/lib/x86_64-linux-gnu/libmnl.so.0"} {
		if _, ok := got[want]; !ok {
			t.Errorf("closure has no %s: %v", want, files)
		}
	}
	if got[ipset].Mode != 0o755 || got["/lib/x86_64-linux-gnu/libc.so.6"].Mode != 0o644 {
		t.Errorf("modes: program %v, library %v", got[ipset].Mode, got["/lib/x86_64-linux-gnu/libc.so.6"].Mode)
	}
	if err := (Spec{Files: files, Config: Config{Entrypoint: []string{ipset}}}).Validate(); err != nil {
		t.Errorf("closure does not make a valid spec: %v", err)
	}
}

func TestHostClosureRefusesMissingProgram(t *testing.T) {
	if _, err := HostClosure([]string{"/nonexistent/program"}, nil); err == nil {
		t.Fatal("no error for a missing program")
	}
}
