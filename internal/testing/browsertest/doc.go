// Package browsertest drives headless Chromium through the user flows of
// sandgate against the full local platform: the real API server, the
// simulated cluster, the auth API and two node proxies on loopback, in
// each routing mode (path, and subdomain with one origin per user). The
// tests are in the package's _test.go files; they skip when Chromium is
// missing, unless CI is set, in which case they fail.
//
// Screenshots of every step, and on a failing step the browser console
// log, are written to $SANDGATE_ARTIFACTS (default
// <module root>/artifacts/browser), one directory per test and routing
// mode (TestBrowserFlows_path, TestBrowserFlows_subdomain).
package browsertest
