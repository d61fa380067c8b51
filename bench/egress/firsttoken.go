package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// firstTokens sends n streamed completions to url one after another and
// returns, for each, the time from sending it to reading its first event.
func firstTokens(ctx context.Context, url string, n int) ([]time.Duration, error) {
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	out := make([]time.Duration, 0, n)
	for range n {
		d, err := firstToken(ctx, client, url)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func firstToken(ctx context.Context, client *http.Client, url string) (time.Duration, error) {
	body := `{"model":"standin-model","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sandgate-egress-placeholder")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("send streamed completion: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("streamed completion: status %d", resp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	var first time.Duration
	for {
		line, err := r.ReadString('\n')
		if first == 0 && strings.HasPrefix(line, "data: ") {
			first = time.Since(start)
		}
		if err != nil {
			break
		}
	}
	if first == 0 {
		return 0, fmt.Errorf("streamed completion: no event")
	}
	return first, nil
}
