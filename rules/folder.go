package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// ManifestName is the file of a rules folder that keeps each document's
// id, kind and description, so that ids survive a round trip through git.
const ManifestName = ".clutch-rules.json"

// Manifest is the content of a folder's ManifestName file.
type Manifest struct {
	Documents []ManifestEntry `json:"documents"`
}

// ManifestEntry describes one document of a folder.
type ManifestEntry struct {
	ID          string `json:"id"`
	Path        string `json:"path"`
	Kind        Kind   `json:"kind"`
	Description string `json:"description,omitempty"`
}

// ImportOptions configures Import. Nil means defaults.
type ImportOptions struct {
	// Actor sends the library events; the library's Options.AgentID when
	// "".
	Actor string
	// Prune removes the documents the folder no longer has.
	Prune bool
}

// ImportStats says what Import changed.
type ImportStats struct {
	Published int // documents new or changed
	Unchanged int
	Removed   int // with ImportOptions.Prune
}

// Import loads a folder of markdown files into the library (source
// "import"), for teams that keep their rules in git: every ".md" file is a
// document at its slash-separated path, its kind from the manifest
// (ManifestName) or else from the path (KindOf with resource ""). A file
// whose content, path, kind and description are those of the library
// stores nothing. Hidden files and folders are skipped; a path CheckPath
// refuses, a file over MaxDocumentSize or a malformed manifest fails the
// import before anything is stored.
func (l *Library) Import(ctx context.Context, fsys fs.FS, opts *ImportOptions) (ImportStats, error) {
	var o ImportOptions
	if opts != nil {
		o = *opts
	}
	if o.Actor == "" {
		o.Actor = l.opts.AgentID
	}
	if !validAgent(o.Actor) {
		return ImportStats{}, wrap(ErrInvalidParams, "ImportOptions.Actor must start with agent:")
	}
	var man Manifest
	byPath := map[string]ManifestEntry{}
	if data, err := fs.ReadFile(fsys, ManifestName); err == nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&man); err != nil {
			return ImportStats{}, wrap(ErrInvalidParams, ManifestName+": "+err.Error())
		}
		ids := map[string]bool{}
		for _, e := range man.Documents {
			if e.ID == "" || len(e.ID) > 256 || strings.HasPrefix(e.ID, "tmp-") || ids[e.ID] || strings.ContainsFunc(e.ID, func(r rune) bool { return r < 0x20 }) {
				return ImportStats{}, wrap(ErrInvalidParams, fmt.Sprintf("%s: bad or repeated id %q", ManifestName, e.ID))
			}
			if (e.ID == MPFID) != (e.Path == MPFID) {
				return ImportStats{}, wrap(ErrInvalidParams, ManifestName+": "+MPFID+" is the id and path of the meta-prompt only")
			}
			ids[e.ID] = true
			byPath[e.Path] = e
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return ImportStats{}, err
	}
	var files []Publish
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(p, ".md") {
			return nil
		}
		if err := CheckPath(p); err != nil {
			return err
		}
		f, err := fsys.Open(p)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(io.LimitReader(f, MaxDocumentSize+1))
		f.Close()
		if err != nil {
			return err
		}
		if len(data) > MaxDocumentSize {
			return wrap(ErrTooLarge, p)
		}
		e := byPath[p]
		k := e.Kind
		if k == "" {
			k = KindOf("", p)
		}
		files = append(files, Publish{ID: e.ID, Kind: k, Path: p, Description: e.Description, Content: string(data)})
		return nil
	})
	if err != nil {
		return ImportStats{}, err
	}
	var st ImportStats
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.syncLocked(ctx); err != nil {
		return st, err
	}
	seen := map[string]bool{}
	for _, p := range files {
		before := l.seq
		d, err := l.publishLocked(ctx, o.Actor, p, "import", nil)
		if err != nil {
			return st, fmt.Errorf("rules: importing %s: %w", p.Path, err)
		}
		seen[d.ID] = true
		if l.seq != before {
			st.Published++
		} else {
			st.Unchanged++
		}
	}
	if o.Prune {
		var gone []*docState
		for id, d := range l.docs {
			if !seen[id] {
				gone = append(gone, d)
			}
		}
		slices.SortFunc(gone, func(a, b *docState) int { return strings.Compare(a.Path, b.Path) })
		for _, d := range gone {
			if _, err := l.appendLocked(ctx, o.Actor, TypeRemoved, &RemovedEvent{ID: d.ID, Path: d.Path, Version: d.Version, Source: "import"}); err != nil {
				return st, err
			}
			st.Removed++
		}
	}
	return st, nil
}

// Export writes the published documents to the folder dir (created when
// missing) at their paths, and the manifest; a file the previous manifest
// listed whose document is gone is removed. Writes stay inside dir
// (os.Root). Drafts are not exported.
func (l *Library) Export(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	var old Manifest
	if data, err := root.ReadFile(ManifestName); err == nil {
		_ = json.Unmarshal(data, &old) // a broken manifest is replaced
	}
	docs := l.Documents()
	man := Manifest{Documents: make([]ManifestEntry, 0, len(docs))}
	keep := map[string]bool{}
	for _, d := range docs {
		content, _, err := l.Content(ctx, d.ID)
		if err != nil {
			return err
		}
		if dir := path.Dir(d.Path); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		if err := root.WriteFile(d.Path, []byte(content), 0o644); err != nil {
			return err
		}
		keep[d.Path] = true
		man.Documents = append(man.Documents, ManifestEntry{ID: d.ID, Path: d.Path, Kind: d.Kind, Description: d.Description})
	}
	for _, e := range old.Documents {
		if !keep[e.Path] && CheckPath(e.Path) == nil {
			if err := root.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	data, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return err
	}
	return root.WriteFile(ManifestName, append(data, '\n'), 0o644)
}
