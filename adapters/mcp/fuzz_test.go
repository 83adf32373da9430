package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// transcriptLines returns the server-to-client messages of the recorded
// sessions in testdata/transcripts.
func transcriptLines(t testing.TB) [][]byte {
	files, _ := filepath.Glob(filepath.Join("testdata", "transcripts", "*.wire.jsonl"))
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if msg, ok := strings.CutPrefix(l, "<< "); ok {
				out = append(out, []byte(msg))
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no transcript lines")
	}
	return out
}

// FuzzFrameFilter: lines within the limit pass unchanged; a longer line
// is replaced by a small error for its id or dropped; nothing panics.
func FuzzFrameFilter(f *testing.F) {
	lines := transcriptLines(f)
	f.Add(bytes.Join(lines, []byte("\n")), uint16(512), false)
	f.Add(bytes.Join(lines, []byte("\n")), uint16(64), false)
	f.Add([]byte("event: message\ndata: "+string(lines[0])+"\n\n"), uint16(100), true)
	f.Add([]byte(`{"result":{"x":"`+strings.Repeat("y", 300)+`"},"id":7}`+"\n"), uint16(50), false)
	f.Fuzz(func(t *testing.T, in []byte, limit uint16, sse bool) {
		lim := int(limit%2048) + 1
		out, err := io.ReadAll(newFrameFilter(io.NopCloser(bytes.NewReader(in)), lim, sse))
		if err != nil {
			t.Fatal(err)
		}
		inLines := bytes.SplitAfter(in, []byte("\n"))
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l := sc.Bytes()
			if len(l) > lim && !bytes.Contains(l, []byte(tooLargeMarker)) {
				t.Fatalf("a line of %d bytes over the limit %d passed", len(l), lim)
			}
		}
		if len(in) <= lim && !bytes.Equal(in, out) {
			t.Fatalf("short input changed: %q -> %q", in, out)
		}
		for _, l := range inLines {
			if len(l) <= lim && !bytes.Contains(out, l) {
				t.Fatalf("line %q within the limit is missing from the output", l)
			}
		}
	})
}

// FuzzIDScanner: on a JSON object, the scanner finds the same top-level
// id as a full decode (when the id is a string or an integer).
func FuzzIDScanner(f *testing.F) {
	for _, l := range transcriptLines(f) {
		f.Add(l, 7)
	}
	f.Add([]byte(`{"a":{"id":1},"id":"x\"y"}`), 3)
	f.Fuzz(func(t *testing.T, in []byte, split int) {
		var sc idScanner
		if split < 0 {
			split = -split
		}
		split %= len(in) + 1
		sc.feed(in[:split])
		sc.feed(in[split:])
		got := sc.id()
		var m map[string]json.RawMessage
		if json.Unmarshal(in, &m) != nil || bytes.Count(in, []byte(`"id"`)) != 1 {
			return // not a plain object with one id key: only no panic is required
		}
		want, ok := m["id"]
		if !ok {
			return
		}
		var n json.Number
		var s string
		isInt := json.Unmarshal(want, &n) == nil && !strings.ContainsAny(string(n), ".eE+")
		isStr := json.Unmarshal(want, &s) == nil
		if (isInt || isStr) && len(want) < maxIDBytes && !bytes.Equal(got, want) {
			t.Fatalf("id %q, want %q in %s", got, want, in)
		}
	})
}

// FuzzClassify: any result or error payload a server sends maps to a code
// of the tool-error table, without panicking.
func FuzzClassify(f *testing.F) {
	for _, l := range transcriptLines(f) {
		f.Add(l)
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"MCP error -32602: Tool nosuch not found"}],"isError":true}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{}"}],"structuredContent":{"error":"e","code":"RATE_LIMITED","retryable":true,"retryAfter":2},"isError":true}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"unknown tool \"x\""}}`))
	f.Add(tooLargeFrame("", []byte("9"), 100, 10))
	allowed := map[protocol.Code]bool{protocol.CodeToolFailed: true, protocol.CodeToolNotFound: true, protocol.CodeRateLimited: true, protocol.CodeTooLarge: true}
	f.Fuzz(func(t *testing.T, in []byte) {
		msg, err := jsonrpc.DecodeMessage(bytes.TrimSpace(in))
		if err != nil {
			return
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok {
			return
		}
		if resp.Error != nil {
			var we *jsonrpc.Error
			if e, ok := resp.Error.(*jsonrpc.Error); ok {
				we = e
			} else {
				return
			}
			if o := classifyWireError(we, "x"); !allowed[o.code] {
				t.Fatalf("code %s", o.code)
			}
			o := classifyError(we, "x", 0)
			if !o.code.Known() {
				t.Fatalf("code %q", o.code)
			}
			return
		}
		var res sdk.CallToolResult
		if json.Unmarshal(resp.Result, &res) != nil {
			return
		}
		o := classifyResult(&res)
		if !allowed[o.code] || o.message == "" {
			t.Fatalf("outcome %+v", o)
		}
	})
}
