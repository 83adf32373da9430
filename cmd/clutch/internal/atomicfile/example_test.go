package atomicfile_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/atomicfile"
)

func Example() {
	dir, _ := os.MkdirTemp("", "atomicfile")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "export.jsonl")

	f, err := atomicfile.Create(path, 0o600)
	if err != nil {
		panic(err)
	}
	defer f.Abort() // a failure before Commit leaves path as it was
	fmt.Fprintln(f, `{"seq":1}`)
	if err := f.Commit(); err != nil {
		panic(err)
	}
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	// Output: {"seq":1}
}
