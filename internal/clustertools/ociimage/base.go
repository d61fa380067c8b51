package ociimage

import (
	"archive/tar"
	"io/fs"
)

// NonrootUID is the uid and gid of the image's unprivileged user, "nonroot",
// as in distroless images.
const NonrootUID = 65532

// passwd and group name root, nobody and nonroot, so that tools that look
// up the current user find one and $HOME resolves.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"nonroot:x:65532:\n"
)

// baseEntries are in every image unless the Spec puts its own entry at the
// same path: the user database, a world-writable /tmp and the home
// directories of root and nonroot.
func baseEntries() map[string]entry {
	return map[string]entry{
		"/etc":          dirEntry(0o755, 0, 0),
		"/etc/passwd":   dataEntry(passwd, 0o644),
		"/etc/group":    dataEntry(group, 0o644),
		"/tmp":          dirEntry(0o777|fs.ModeSticky, 0, 0),
		"/root":         dirEntry(0o700, 0, 0),
		"/home":         dirEntry(0o755, 0, 0),
		"/home/nonroot": dirEntry(0o700, NonrootUID, NonrootUID),
	}
}

func dataEntry(data string, mode fs.FileMode) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Mode: unixMode(mode), Size: int64(len(data))}, data: []byte(data)}
}

func dirEntry(mode fs.FileMode, uid, gid int) entry {
	return entry{hdr: tar.Header{Typeflag: tar.TypeDir, Mode: unixMode(mode), Uid: uid, Gid: gid}}
}
