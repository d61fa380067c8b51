package agentapp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

const (
	// conversationFile is the conversation log under DataDir, one JSON
	// Message per line.
	conversationFile = "conversation.jsonl"
	maxMessageBody   = 1 << 20
	maxMessageText   = 16 << 10
)

// Message is one entry of the conversation log, as GET /api/messages lists
// it and as DataDir/conversation.jsonl stores it.
type Message struct {
	// Seq numbers the messages of a DataDir from 1; it survives restarts.
	Seq int `json:"seq"`
	// Time is when the app received the message.
	Time time.Time `json:"time"`
	// Text is the message, trimmed of surrounding space.
	Text string `json:"text"`
}

// conversation is the log in memory plus its file. Every add appends one
// line to the file before it shows in the list.
type conversation struct {
	mu   sync.Mutex
	root *os.Root // DataDir
	msgs []Message
	torn bool // the file does not end in a newline (a write was cut short)
}

// loadConversation reads the log in root, skipping (and reporting) lines
// that do not parse, such as one cut short by a crash.
func loadConversation(root *os.Root, con *console) (*conversation, error) {
	c := &conversation{root: root}
	raw, err := root.ReadFile(conversationFile)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	c.torn = len(raw) > 0 && raw[len(raw)-1] != '\n'
	for i, line := range bytes.Split(raw, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m Message
		if err := json.Unmarshal(line, &m); err != nil {
			con.errf("dsh web: warning: %s line %d skipped: %v", conversationFile, i+1, err)
			continue
		}
		c.msgs = append(c.msgs, m)
	}
	return c, nil
}

func (c *conversation) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

func (c *conversation) list() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message{}, c.msgs...)
}

func (c *conversation) add(text string, now time.Time) (Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := Message{Seq: 1, Time: now, Text: text}
	if n := len(c.msgs); n > 0 {
		m.Seq = c.msgs[n-1].Seq + 1
	}
	line, err := json.Marshal(m)
	if err != nil {
		return Message{}, fmt.Errorf("encode message: %w", err)
	}
	if c.torn {
		line = append([]byte("\n"), line...)
	}
	line = append(line, '\n')
	f, err := c.root.OpenFile(conversationFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return Message{}, fmt.Errorf("open conversation log: %w", err)
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Message{}, fmt.Errorf("append to conversation log: %w", err)
	}
	c.torn = false
	c.msgs = append(c.msgs, m)
	return m, nil
}

// listMessages answers GET /api/messages with the whole log as a JSON array.
func (a *App) listMessages(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, a.convo.list())
}

// postMessage appends to the log. A JSON body {"text": ...} gets 201 and the
// stored Message; a form post (field "text") gets 303 back to the page, as a
// relative URL so it works under a path prefix.
func (a *App) postMessage(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxMessageBody)
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var text string
	switch mediaType {
	case "application/json":
		var body struct {
			Text string `json:"text"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, "invalid JSON body", bodyErrorStatus(err))
			return
		}
		text = body.Text
	case "application/x-www-form-urlencoded", "multipart/form-data":
		var err error
		if mediaType == "multipart/form-data" {
			err = r.ParseMultipartForm(maxMessageBody)
		} else {
			err = r.ParseForm()
		}
		if err != nil {
			http.Error(w, "invalid form body", bodyErrorStatus(err))
			return
		}
		text = r.PostFormValue("text")
	default:
		http.Error(w, "want JSON or a form", http.StatusUnsupportedMediaType)
		return
	}

	text = strings.TrimSpace(text)
	switch {
	case text == "":
		http.Error(w, "text is required", http.StatusBadRequest)
		return
	case len(text) > maxMessageText:
		http.Error(w, "text is too long", http.StatusRequestEntityTooLarge)
		return
	}
	m, err := a.convo.add(text, a.opts.Now())
	if err != nil {
		a.con.errf("dsh web: error: %v", err)
		http.Error(w, "cannot store message", http.StatusInternalServerError)
		return
	}
	if mediaType != "application/json" {
		w.Header().Set("Location", "../")
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	writeJSON(w, http.StatusCreated, m)
}
