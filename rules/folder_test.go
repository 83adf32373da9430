package rules

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/fstest"

	"github.com/clutchprotocol/clutch/store/memstore"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestImportExportRoundTrip(t *testing.T) {
	ctx := context.Background()
	l, _, _ := newLib(t)
	src := fstest.MapFS{
		"workflows/CODING.md":    {Data: []byte(codingMD)},
		"rules/go/ERRORS.md":     {Data: []byte(reviewMD)},
		"context/SETUP.md":       {Data: []byte(setupMD)},
		"META_PROMPT.md":         {Data: []byte("# Ours\n")},
		"README.txt":             {Data: []byte("not markdown")},
		".git/config.md":         {Data: []byte("hidden")},
		"guides/.draft.md":       {Data: []byte("hidden")},
		"misc/notes.md":          {Data: []byte("notes")},
		"rules/go/ERRORS_old.md": {Data: []byte("## Old\n")},
	}
	st, err := l.Import(ctx, src, nil)
	require.NoError(t, err)
	assert.Equal(t, ImportStats{Published: 6}, st)
	byPath := map[string]Document{}
	for _, d := range l.Documents() {
		byPath[d.Path] = d
	}
	assert.Equal(t, KindWorkflow, byPath["workflows/CODING.md"].Kind)
	assert.Equal(t, KindRule, byPath["rules/go/ERRORS.md"].Kind)
	assert.Equal(t, KindContext, byPath["misc/notes.md"].Kind)
	assert.Equal(t, KindMPF, byPath[MPFID].Kind)
	assert.Equal(t, MPFID, byPath[MPFID].ID)

	st, err = l.Import(ctx, src, nil)
	require.NoError(t, err)
	assert.Equal(t, ImportStats{Unchanged: 6}, st, "an unchanged folder stores nothing")

	dir := t.TempDir()
	require.NoError(t, l.Export(ctx, dir))
	got, err := os.ReadFile(filepath.Join(dir, "workflows", "CODING.md"))
	require.NoError(t, err)
	assert.Equal(t, codingMD, string(got))

	// A second library imports the exported folder with the same ids.
	l2, _, _ := newLib(t)
	_, err = l2.Import(ctx, os.DirFS(dir), nil)
	require.NoError(t, err)
	assert.Equal(t, idsByPath(l.Documents()), idsByPath(l2.Documents()))

	// Prune removes what the folder lost; Export removes the files of
	// removed documents.
	require.NoError(t, os.Remove(filepath.Join(dir, "rules", "go", "ERRORS_old.md")))
	st, err = l.Import(ctx, os.DirFS(dir), &ImportOptions{Prune: true, Actor: "agent:git"})
	require.NoError(t, err)
	assert.Equal(t, 1, st.Removed)
	require.NoError(t, l.Remove(ctx, "agent:lead", byPath["misc/notes.md"].ID))
	require.NoError(t, l.Export(ctx, dir))
	_, err = os.Stat(filepath.Join(dir, "misc", "notes.md"))
	assert.True(t, os.IsNotExist(err))

	_, err = l.Import(ctx, fstest.MapFS{ManifestName: {Data: []byte(`{"documents":[{"id":"tmp-1","path":"a.md","kind":"rule"}]}`)}}, nil)
	assert.ErrorIs(t, err, ErrInvalidParams)
	_, err = l.Import(ctx, fstest.MapFS{ManifestName: {Data: []byte(`{"documents":[{"id":"d","path":"a.md","kind":"policy"}]}`)}, "a.md": {Data: []byte("a")}}, nil)
	assert.ErrorIs(t, err, ErrInvalidParams)
	_, err = l.Import(ctx, fstest.MapFS{"big.md": {Data: make([]byte, MaxDocumentSize+1)}}, nil)
	assert.ErrorIs(t, err, ErrTooLarge)
}

func idsByPath(docs []Document) map[string]string {
	m := map[string]string{}
	for _, d := range docs {
		m[d.Path] = d.ID + " " + string(d.Kind) + " " + d.Hash
	}
	return m
}

// FuzzImport feeds Import a manifest and a document of any bytes: it never
// panics, and a folder it accepts round-trips through Export.
func FuzzImport(f *testing.F) {
	f.Add([]byte(`{"documents":[{"id":"doc_1","path":"rules/A.md","kind":"rule","description":"d"}]}`), "rules/A.md", []byte("## A\n- x\n"))
	f.Add([]byte(`{"documents":[{"id":"META_PROMPT.md","path":"META_PROMPT.md","kind":"mpf"}]}`), "META_PROMPT.md", []byte("# p"))
	f.Add([]byte(`{"documents":[{"id":"x","path":"a.md","kind":"rule","extra":1}]}`), "a.md", []byte(""))
	f.Add([]byte(`{"documents":[{"id":"x","path":"a.md"},{"id":"x","path":"b.md"}]}`), "b.md", []byte("b"))
	f.Add([]byte(`null`), "context/x.md", []byte("x"))
	f.Fuzz(func(t *testing.T, manifest []byte, p string, body []byte) {
		if !fs.ValidPath(p) || p == ManifestName {
			return
		}
		ctx := context.Background()
		st, err := memstore.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		l, err := Open(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Import(ctx, fstest.MapFS{ManifestName: {Data: manifest}, p: {Data: body}}, nil); err != nil {
			return
		}
		dir := t.TempDir()
		if err := l.Export(ctx, dir); err != nil {
			t.Fatal(err)
		}
		l2, err := Open(ctx, st, &Options{Workspace: "copy"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l2.Import(ctx, os.DirFS(dir), nil); err != nil {
			t.Fatal(err)
		}
		if a, b := idsByPath(l.Documents()), idsByPath(l2.Documents()); !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip: %v != %v", a, b)
		}
	})
}
