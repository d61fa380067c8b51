// Package webpage is the HTML shell every sandgate page shares, in the auth
// API and the node proxies: one stylesheet, one strict
// Content-Security-Policy (no script, no external asset), the security
// headers, and a small message page for errors and waits.
package webpage
