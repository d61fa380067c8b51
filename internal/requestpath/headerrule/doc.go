// Package headerrule is the one rule for which headers cross a proxy in
// one direction. Every direction of the node proxy (a client's request to
// the app, to a peer node's proxy and to the auth API; a response from
// the app or the auth API) and of the egress listener (a sandbox's call to
// a provider and the provider's answer) is a Rule: what differs between
// them is the Spec, data that one table test covers.
//
// A Rule always drops the headers a Connection header names (RFC 9110
// 7.6.1) and reads every name lower-cased on the stack, so copying a
// header block allocates nothing of its own.
package headerrule
