package store_test

import (
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

func TestParseArtifactRef(t *testing.T) {
	data := []byte("report")
	ref := store.ArtifactRef(data)
	sum, err := store.ParseArtifactRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	if store.ArtifactRefFromDigest(sum) != ref {
		t.Fatalf("round trip of %s gave %s", ref, store.ArtifactRefFromDigest(sum))
	}
	for _, bad := range []string{"", ref[:len(ref)-1], ref + "a", "artifact:sha1:" + ref[16:]} {
		if _, err := store.ParseArtifactRef(bad); !errors.Is(err, store.ErrInvalidRef) {
			t.Errorf("ParseArtifactRef(%q) = %v, want ErrInvalidRef", bad, err)
		}
	}
}

func TestCheckMediaType(t *testing.T) {
	for in, want := range map[string]string{"": store.DefaultMediaType, "application/pdf": "application/pdf", "text/plain; charset=utf-8": "text/plain; charset=utf-8"} {
		if got, err := store.CheckMediaType(in); err != nil || got != want {
			t.Errorf("CheckMediaType(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"pdf file", "text/", "a/b; c"} {
		if _, err := store.CheckMediaType(bad); !errors.Is(err, store.ErrInvalidMediaType) {
			t.Errorf("CheckMediaType(%q) = %v, want ErrInvalidMediaType", bad, err)
		}
	}
}

func TestErrorsCarryCodes(t *testing.T) {
	for err, code := range map[error]protocol.Code{
		store.ErrNotFound: protocol.CodeNotFound,
		&store.TooLargeError{What: "message", Size: 2, Limit: 1}:                         protocol.CodeTooLarge,
		&store.InvalidMessageError{Err: &protocol.Error{Code: protocol.CodeUnknownType}}: protocol.CodeUnknownType,
		store.Query{Limit: -1}.Validate():                                                protocol.CodeInvalidField,
	} {
		if got := protocol.CodeOf(err); got != code {
			t.Errorf("CodeOf(%v) = %s, want %s", err, got, code)
		}
	}
	if !errors.Is(&store.TooLargeError{}, protocol.CodeTooLarge) || !errors.Is(&store.TooLargeError{}, store.ErrTooLarge) {
		t.Error("TooLargeError does not match its sentinels")
	}
	if !errors.Is(store.Query{Limit: -1}.Validate(), store.ErrInvalidQuery) {
		t.Error("QueryError does not match ErrInvalidQuery")
	}
}

func TestDedupRuleString(t *testing.T) {
	for r, want := range map[store.DedupRule]string{store.NotDuplicate: "none", store.DedupByID: "id", store.DedupByIdempotencyKey: "idempotency_key", 9: "DedupRule(9)"} {
		if r.String() != want {
			t.Errorf("%d.String() = %q, want %q", r, r.String(), want)
		}
	}
}
