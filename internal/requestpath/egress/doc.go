// Package egress is the node proxy's egress path for model-provider calls:
// a sandbox calls http://<its node>:<port>/<provider>/..., is identified by
// its source address from the informer caches (never by anything it
// sends), and the call goes on to the provider with the real key, read
// from a mounted Secret file, instead of whatever credential the sandbox
// sent. Each user has a budget of requests per minute and tokens per day,
// counted from the provider's usage fields; responses stream unbuffered.
package egress
