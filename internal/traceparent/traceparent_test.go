package traceparent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
)

// The examples of the W3C Trace Context recommendation, §3.2.
const (
	w3cTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	w3cSpan  = "00f067aa0ba902b7"
	w3cValue = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
)

func TestParse(t *testing.T) {
	tr, ok := Parse(w3cValue)
	require.True(t, ok)
	assert.Equal(t, &protocol.Trace{TraceID: w3cTrace, SpanID: w3cSpan}, tr)

	tr, ok = Parse("00-" + w3cTrace + "-" + w3cSpan + "-00") // not sampled: the ids still count
	require.True(t, ok)
	assert.Equal(t, w3cSpan, tr.SpanID)

	tr, ok = Parse("cc-" + w3cTrace + "-" + w3cSpan + "-01-what-the-future-adds")
	require.True(t, ok, "a later version may append fields after a dash")
	assert.Equal(t, w3cTrace, tr.TraceID)

	for _, bad := range []string{
		"",
		"00-" + w3cTrace + "-" + w3cSpan,         // no flags
		w3cValue + "-",                           // version 00 is exactly 55 bytes
		"ff-" + w3cTrace + "-" + w3cSpan + "-01", // version ff is invalid
		"00-" + "4BF92F3577B34DA6A3CE929D0E0E4736" + "-" + w3cSpan + "-01", // uppercase
		"00-00000000000000000000000000000000-" + w3cSpan + "-01",           // zero trace id
		"00-" + w3cTrace + "-0000000000000000-01",                          // zero span id
		"00_" + w3cTrace + "-" + w3cSpan + "-01",
		"cc-" + w3cTrace + "-" + w3cSpan + "-01x",
		"00-" + w3cTrace + "-" + w3cSpan + "-0g",
	} {
		_, ok := Parse(bad)
		assert.False(t, ok, "%q", bad)
	}
}

func TestFormat(t *testing.T) {
	assert.Equal(t, w3cValue, Format(&protocol.Trace{TraceID: w3cTrace, SpanID: w3cSpan, ParentSpanID: "ignored"}))
	assert.Empty(t, Format(nil))
	assert.Empty(t, Format(&protocol.Trace{TraceID: w3cTrace}), "no span id")
	assert.Empty(t, Format(&protocol.Trace{TraceID: "trace-1", SpanID: w3cSpan}), "not a W3C id")
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{w3cValue, "cc-" + w3cTrace + "-" + w3cSpan + "-01-x", "", "00-", "ff-" + w3cTrace + "-" + w3cSpan + "-01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tr, ok := Parse(s)
		if !ok {
			return
		}
		// What parses formats back to the same ids.
		back, ok := Parse(Format(tr))
		if !ok || *back != *tr {
			t.Fatalf("%q parsed to %+v, which does not round-trip", s, tr)
		}
	})
}
