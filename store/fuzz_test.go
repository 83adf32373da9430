package store

import (
	"errors"
	"testing"
)

// FuzzParseArtifactRef: refs come from outside (attachments of foreign
// messages). Parsing never panics; what parses is exactly the ref of its
// digest; everything else is ErrInvalidRef.
func FuzzParseArtifactRef(f *testing.F) {
	for _, s := range []string{
		ArtifactRef([]byte("hello")),
		"artifact:sha256:",
		"artifact:report_456",
		"artifact:sha256:9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		sum, err := ParseArtifactRef(ref)
		if err != nil {
			if !errors.Is(err, ErrInvalidRef) {
				t.Fatalf("error %v does not match ErrInvalidRef", err)
			}
			return
		}
		if got := ArtifactRefFromDigest(sum); got != ref {
			t.Fatalf("parsed %q, prints back as %q", ref, got)
		}
	})
}

// FuzzCheckMediaType: media types come from outside too.
func FuzzCheckMediaType(f *testing.F) {
	for _, s := range []string{"", "application/pdf", "text/plain; charset=utf-8", "nonsense", "a/b; x="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, mt string) {
		if _, err := CheckMediaType(mt); err != nil && !errors.Is(err, ErrInvalidMediaType) {
			t.Fatalf("error %v does not match ErrInvalidMediaType", err)
		}
	})
}
