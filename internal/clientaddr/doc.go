// Package clientaddr names the client behind a chain of trusted proxies,
// the rule both the auth API and the node proxy rate limit by.
//
// Walking X-Forwarded-For from the right, each trusted proxy vouches for
// the entry to its left; the first address no trusted proxy owns is the
// client. Entries further left are whatever the client chose to send.
package clientaddr
