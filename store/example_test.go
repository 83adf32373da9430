package store_test

import (
	"fmt"

	"github.com/clutchprotocol/clutch/store"
)

// Artifacts are named by their content, so any store gives the same bytes
// the same ref, and a ref can be checked before it is looked up.
func ExampleArtifactRef() {
	ref := store.ArtifactRef([]byte("hello"))
	fmt.Println(ref)
	_, err := store.ParseArtifactRef("artifact:report_456")
	fmt.Println(err != nil)
	// Output:
	// artifact:sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824
	// true
}
