package testkit

// Env is a getenv for a command's run function that sees only kv, so a
// test never reads the real environment.
func Env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}
