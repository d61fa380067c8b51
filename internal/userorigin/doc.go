// Package userorigin holds the rules of subdomain routing shared by the
// auth API and the node proxies: the routing modes, which Host names a
// user origin (<user>.<USER_DOMAIN>), the entry path where a single-use
// code becomes an origin session, and which post-entry redirect targets
// are safe.
package userorigin
