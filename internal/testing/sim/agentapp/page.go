package agentapp

import (
	"embed"
	"net/http"
)

// static holds the page and its assets. The page uses <base href="./"> and
// relative URLs only, and loads nothing from elsewhere. Browser tests can
// rely on these element ids:
//
//   - #status: "ready" once the conversation has loaded;
//   - #conversation: one <li> per message (data-count holds the number);
//   - #message-form, #message-text: post a message to the conversation;
//   - #events: the latest SSE events (data-count, data-last-seq, data-state);
//   - #event-count: the number of SSE events received;
//   - #ws-status: "open", then "closed <code>";
//   - #ws-echo: the last echoed WebSocket text (the page sends
//     "hello from the page" on open);
//   - #ws-ticks: the last server-pushed "tick <n>";
//   - #ws-form, #ws-text: send a text message over the WebSocket.
//
//go:embed static
var static embed.FS

// assetType returns the media type of a file served under /assets/, or ""
// for a name that is not an asset.
func assetType(name string) string {
	switch name {
	case "app.css":
		return "text/css; charset=utf-8"
	case "app.js":
		return "text/javascript; charset=utf-8"
	}
	return ""
}

func serveStatic(w http.ResponseWriter, file, contentType string) {
	body, err := static.ReadFile("static/" + file)
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(body)
}

// servePage answers GET / with the app's HTML page.
func servePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	serveStatic(w, "index.html", "text/html; charset=utf-8")
}

// serveAsset answers GET /assets/<name> for the names assetType knows.
func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	contentType := assetType(name)
	if contentType == "" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	serveStatic(w, name, contentType)
}

// serveFavicon answers the probe path without auth.
func serveFavicon(w http.ResponseWriter, r *http.Request) {
	serveStatic(w, "favicon.svg", "image/svg+xml")
}
