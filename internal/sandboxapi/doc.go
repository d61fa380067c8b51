// Package sandboxapi is sandgate's typed access to the agent-sandbox API: a
// scheme with the agents and extensions types, typed clients built on
// client-go's generic clients, and informer constructors for them.
package sandboxapi
