// Package httpprobe checks that an HTTP endpoint answers 200 OK, as
// readiness probes and start-up waits do.
package httpprobe

import (
	"fmt"
	"net/http"
)

// OK sends req with client and returns nil when it answers 200 OK; the
// body is closed unread.
func OK(client *http.Client, req *http.Request) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}
