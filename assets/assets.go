// Package assets embeds the static files (CSS, scripts, images) and names each by a checksum of its
// content, so that pages can ask browsers to cache them for a year and still see every change.
package assets

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"path"
)

//go:embed css js img
var files embed.FS

// File is one static file with its content type and checksum.
type File struct {
	Body        []byte
	ContentType string
	Sum         string // first 12 hex digits of the SHA-256 of Body
}

// Set is every embedded file by its path (for example "css/site.css").
type Set struct {
	files map[string]File
}

// Load reads and checksums every embedded file.
func Load() (*Set, error) {
	s := &Set{files: map[string]File{}}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		s.files[p] = File{Body: b, ContentType: ct, Sum: hex.EncodeToString(sum[:6])}
		return nil
	})
	return s, err
}

// Get returns the file at p.
func (s *Set) Get(p string) (File, bool) {
	f, ok := s.files[p]
	return f, ok
}

// URL returns the address of the file at p with its checksum, for templates. An unknown file still gets
// an address (that answers 404), so that a typo shows in the browser rather than breaking the page.
func (s *Set) URL(p string) string {
	if f, ok := s.files[p]; ok {
		return "/assets/" + p + "?v=" + f.Sum
	}
	return "/assets/" + p
}
