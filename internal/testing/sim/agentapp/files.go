package agentapp

import (
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// workspaceDir is the agent workspace under DataDir. File names in
// /api/files/<name> are relative to it.
const workspaceDir = "workspace"

// FileInfo is the JSON reply to a workspace upload.
type FileInfo struct {
	// Name is the file's path inside the workspace.
	Name string `json:"name"`
	// Size is the number of bytes stored.
	Size int64 `json:"size"`
}

// validFileName accepts clean, relative, slash-separated names that stay
// inside the workspace. The os.Root the files go through enforces the same
// through symlinks; this check gives a clear 400 first.
func validFileName(name string) bool {
	return name != "" && name != "." &&
		path.Clean(name) == name &&
		filepath.IsLocal(name) &&
		!strings.ContainsAny(name, "\\\x00")
}

// withFileName runs h with the request's {name} once validFileName
// accepts it, and answers 400 otherwise.
func withFileName(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if !validFileName(name) {
			http.Error(w, "invalid file name", http.StatusBadRequest)
			return
		}
		h(w, r, name)
	}
}

// uploadFile answers PUT /api/files/<name>: it stores the body (at most
// MaxUploadBytes) under the workspace, creating parent directories, and
// replaces an existing file only once the whole body has arrived.
func (a *App) uploadFile(w http.ResponseWriter, r *http.Request, name string) {
	if dir := path.Dir(name); dir != "." {
		if err := a.workspace.MkdirAll(dir, 0o700); err != nil {
			a.fileError(w, "create directory", err)
			return
		}
	}
	tmp := path.Join(path.Dir(name), ".upload-"+hex.EncodeToString(randomBytes(8)))
	f, err := a.workspace.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		a.fileError(w, "create file", err)
		return
	}
	n, err := io.Copy(f, http.MaxBytesReader(w, r.Body, a.opts.MaxUploadBytes))
	if cerr := f.Close(); err == nil && cerr != nil {
		a.workspace.Remove(tmp)
		a.fileError(w, "write file", cerr)
		return
	}
	if err != nil {
		a.workspace.Remove(tmp)
		http.Error(w, "cannot read body", bodyErrorStatus(err))
		return
	}
	if err := a.workspace.Rename(tmp, name); err != nil {
		a.workspace.Remove(tmp)
		a.fileError(w, "store file", err)
		return
	}
	writeJSON(w, http.StatusCreated, FileInfo{Name: name, Size: n})
}

// downloadFile answers GET /api/files/<name> with the file's bytes, as an
// opaque download (no content sniffing). Range requests work.
func (a *App) downloadFile(w http.ResponseWriter, r *http.Request, name string) {
	f, err := a.workspace.Open(name)
	if err != nil {
		a.fileError(w, "open file", err)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		a.fileError(w, "stat file", err)
		return
	}
	if !info.Mode().IsRegular() {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", info.ModTime(), f)
}

// viewFile answers GET /view/<name> with a workspace file rendered by the
// browser (text/html for .html, else by extension), scripts and all.
func (a *App) viewFile(w http.ResponseWriter, r *http.Request, name string) {
	data, err := a.workspace.ReadFile(name)
	if err != nil {
		a.fileError(w, "read file", err)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "text/plain; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	w.Write(data)
}

// fileError answers a failed workspace operation: 404 for a missing file,
// 403 for anything else the root refuses or the OS fails (a symlink leaving
// the workspace, a directory in the way). The cause goes to stderr.
func (a *App) fileError(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	a.con.errf("dsh web: error: %s: %v", what, err)
	http.Error(w, "cannot "+what, http.StatusForbidden)
}
