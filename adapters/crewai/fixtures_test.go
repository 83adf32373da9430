package crewai_test

import (
	"bytes"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
)

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func enc(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withMember adds name: value to a JSON object, as a host does with the
// id it has from a URL.
func withMember(t testing.TB, obj []byte, name string, value any) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		t.Fatal(err)
	}
	m[name] = enc(t, value)
	return enc(t, m)
}

// lifecycle returns the three tracing request bodies of the recorded
// cassette, with the trace id of their URL added to the events and
// finalize bodies (as a host serving the tracing API does).
func lifecycle(t testing.TB) []adaptertest.Case {
	var cas struct {
		Interactions []struct {
			Method, Path string
			RequestBody  json.RawMessage `json:"request_body"`
		}
	}
	if err := json.Unmarshal(read(t, "trace_lifecycle_success.json"), &cas); err != nil {
		t.Fatal(err)
	}
	var out []adaptertest.Case
	for i, in := range cas.Interactions {
		body := []byte(in.RequestBody)
		if parts := strings.Split(in.Path, "/"); len(parts) > 7 {
			body = withMember(t, body, "trace_id", parts[6])
		}
		out = append(out, adaptertest.Case{Name: "trace_lifecycle_success/" + string(rune('0'+i)) + "-" + in.Method, Raw: body})
	}
	if len(out) != 3 {
		t.Fatalf("%d interactions", len(out))
	}
	return out
}

// examples returns the OpenAPI examples: kickoff requests and response,
// status answers (with the kickoff id of their URL), resume requests and
// answers.
func examples(t testing.TB) []adaptertest.Case {
	var k struct {
		Requests map[string]json.RawMessage
		Response json.RawMessage `json:"response_200_example"`
	}
	if err := json.Unmarshal(read(t, "amp_kickoff_examples.json"), &k); err != nil {
		t.Fatal(err)
	}
	var s struct {
		Status map[string]json.RawMessage
		Resume struct{ Requests, Responses map[string]json.RawMessage }
	}
	if err := json.Unmarshal(read(t, "amp_status_resume_examples.json"), &s); err != nil {
		t.Fatal(err)
	}
	const kid = "abcd1234-5678-90ef-ghij-klmnopqrstuv"
	var out []adaptertest.Case
	add := func(name string, m map[string]json.RawMessage, withID bool) {
		keys := make([]string, 0, len(m))
		for n := range m {
			keys = append(keys, n)
		}
		sort.Strings(keys)
		for _, n := range keys {
			if n == "not_found_404" {
				continue
			}
			b := []byte(m[n])
			if withID {
				b = withMember(t, b, "kickoff_id", kid)
			}
			out = append(out, adaptertest.Case{Name: name + "/" + n, Raw: b})
		}
	}
	add("kickoff", k.Requests, false)
	out = append(out, adaptertest.Case{Name: "kickoff/response", Raw: k.Response})
	add("status", s.Status, true)
	add("resume", s.Resume.Requests, false)
	add("resume-response", s.Resume.Responses, true)
	return out
}

func chunks(t testing.TB) []adaptertest.Case {
	var out []adaptertest.Case
	for i, l := range bytes.Split(bytes.TrimSpace(read(t, "crew_stream_chunks_constructed.jsonl")), []byte("\n")) {
		out = append(out, adaptertest.Case{Name: "stream_chunk/" + string(rune('0'+i)), Raw: l})
	}
	return out
}

// allFixtures is every fixture of testdata, as inbound bodies.
func allFixtures(t testing.TB) []adaptertest.Case {
	return append(contractFixtures(t), adaptertest.Case{Name: "trace_batch_delegation_sequential", Raw: read(t, "trace_batch_delegation_sequential.json")})
}

// contractFixtures are the fixtures adaptertest.Run mutates: all but the
// 36 KB delegation batch, whose every member retyped takes minutes under
// -race; its excerpt without the LLM events and the agent dumps stands in.
func contractFixtures(t testing.TB) []adaptertest.Case {
	out := []adaptertest.Case{
		{Name: "amp_webhook_events_batch", Raw: read(t, "amp_webhook_events_batch.json")},
		{Name: "delegation excerpt", Raw: delegationExcerpt(t)},
	}
	out = append(out, lifecycle(t)...)
	out = append(out, examples(t)...)
	return append(out, chunks(t)...)
}

func delegationExcerpt(t testing.TB) []byte {
	var b struct {
		Events        []map[string]any `json:"events"`
		BatchMetadata any              `json:"batch_metadata"`
	}
	if err := json.Unmarshal(read(t, "trace_batch_delegation_sequential.json"), &b); err != nil {
		t.Fatal(err)
	}
	var keep []map[string]any
	for _, e := range b.Events {
		if strings.HasPrefix(e["type"].(string), "llm_") {
			continue
		}
		delete(e["event_data"].(map[string]any), "agent")
		keep = append(keep, e)
	}
	b.Events = keep
	return enc(t, b)
}
