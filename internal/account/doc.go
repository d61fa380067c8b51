// Package account is the contract between the auth API, which writes user
// accounts as SandboxClaims, and the node proxies, which read them from
// informers: the claim's name, labels and annotations, the user-name rules,
// and the revocation state (session epoch and revoked session ids) that lets
// proxies end sessions without a session store.
package account
