package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Kind is what a document is for.
type Kind string

// The kinds of documents (docs/protocol.md §15.6).
const (
	KindRule     Kind = "rule"     // constraints an agent must follow
	KindWorkflow Kind = "workflow" // steps an agent follows; constraints too
	KindContext  Kind = "context"  // reference material, never a refer target
	KindMPF      Kind = "mpf"      // the workspace's meta-prompt
)

// nameGroup derives a document's name and group from its path.
func nameGroup(p string) (name, group string) {
	name = strings.TrimSuffix(path.Base(p), path.Ext(p))
	if i := strings.IndexByte(p, '/'); i > 0 {
		group = p[:i]
	}
	return name, group
}

// KindOf returns the kind a path gives a document of a resource
// (docs/protocol.md §15.6): resource "rule" is a workflow under
// "workflow/" or "workflows/", a rule elsewhere; "context" is context;
// "mpf" is the meta-prompt. Resource "" decides by path alone, as a folder
// import does: "rule/" and "rules/" hold rules, "workflow/" and
// "workflows/" workflows, META_PROMPT.md is the meta-prompt, anything else
// is context.
func KindOf(resource, p string) Kind {
	first, _, _ := strings.Cut(p, "/")
	switch resource {
	case "mpf":
		return KindMPF
	case "context":
		return KindContext
	case "rule":
		if first == "workflow" || first == "workflows" {
			return KindWorkflow
		}
		return KindRule
	}
	switch {
	case p == MPFID:
		return KindMPF
	case first == "rule" || first == "rules":
		return KindRule
	case first == "workflow" || first == "workflows":
		return KindWorkflow
	}
	return KindContext
}

// ResourceOf returns the artifact resource of a kind.
func ResourceOf(k Kind) string {
	switch k {
	case KindRule, KindWorkflow:
		return "rule"
	case KindMPF:
		return "mpf"
	}
	return "context"
}

// CheckPath returns an ErrUnsafePath error unless p is a safe
// workspace-relative path of a markdown document: relative, clean (no
// "." or ".." segments, no "//"), forward slashes only, ending in ".md",
// without control characters, at most 512 bytes.
func CheckPath(p string) error {
	bad := func(why string) error { return wrap(ErrUnsafePath, fmt.Sprintf("%q %s", p, why)) }
	switch {
	case p == "" || len(p) > 512:
		return bad("must be 1 to 512 bytes")
	case strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || (len(p) > 1 && p[1] == ':'):
		return bad("must be relative, with forward slashes")
	case path.Clean(p) != p || p == "." || strings.HasPrefix(p, "../") || p == "..":
		return bad("must be clean and stay inside the workspace")
	case !strings.HasSuffix(p, ".md") || strings.HasSuffix(p, "/.md"):
		return bad("must name a .md file")
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0xfffd }):
		return bad("must not hold control characters")
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." || seg == "." || strings.HasPrefix(seg, ".") {
			return bad("must not have hidden or relative segments")
		}
	}
	return nil
}

// checkDoc checks the fields of a published document.
func checkDoc(id string, k Kind, p, ref string) error {
	if id == "" || len(id) > protocol.MaxIDLength {
		return wrap(ErrInvalidParams, "bad document id")
	}
	switch k {
	case KindRule, KindWorkflow, KindContext:
		if p == MPFID || id == MPFID {
			return wrap(ErrUnsafePath, MPFID+" is the meta-prompt's")
		}
	case KindMPF:
		if p != MPFID || id != MPFID {
			return wrap(ErrUnsafePath, "the meta-prompt lives at "+MPFID)
		}
	default:
		return wrap(ErrInvalidParams, "bad kind")
	}
	if err := CheckPath(p); err != nil {
		return err
	}
	_, err := store.ParseArtifactRef(ref)
	return err
}

// tmpID is the id of a create-only draft at path p: "tmp-" and 24 hex
// digits of the path's SHA-256, the same for the same path.
func tmpID(p string) string {
	sum := sha256.Sum256([]byte(p))
	return "tmp-" + hex.EncodeToString(sum[:12])
}
