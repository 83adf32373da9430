package schema

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/xeipuuv/gojsonschema"
)

// A typical research.summary.v1 payload (docs/protocol.md §1.1, filled in): 3
// findings, 2 citations, ~300 bytes.
var benchSummary = []byte(`{"title":"Market analysis complete","findings":["The fintech lending market grew 12% in 2025","Three incumbents hold 61% of the market","Regulation is tightening in the EU"],"citations":["https://example.com/reports/fintech-2025","https://example.com/eu/regulation"]}`)

// benchRegistry returns a registry holding the built-ins and n more types.
func benchRegistry(b *testing.B, n int) *Registry {
	b.Helper()
	reg := newRegistry(b, nil)
	for i := range n {
		doc := fmt.Sprintf(`{"type":"object","required":["id"],"properties":{"id":{"type":"string"},"n%d":{"type":"integer"}}}`, i)
		if err := reg.Register(fmt.Sprintf("bench.type%d.v1", i), []byte(doc)); err != nil {
			b.Fatal(err)
		}
	}
	return reg
}

// BenchmarkValidate compares validation through the registry (1,000 extra
// types registered) with gojsonschema alone on the same compiled schema
// document, in the same run. The target is registry ≤ 1.2 × raw.
func BenchmarkValidate(b *testing.B) {
	reg := benchRegistry(b, 1000)
	s, _ := reg.Lookup(PayloadResearchSummary)
	raw, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(s.JSON()))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("raw_gojsonschema", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchSummary)))
		for b.Loop() {
			res, err := raw.Validate(gojsonschema.NewBytesLoader(benchSummary))
			if err != nil || !res.Valid() {
				b.Fatal(err, res.Errors())
			}
		}
	})
	b.Run("registry_1000_types", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchSummary)))
		if reg.Len() < 1000 {
			b.Fatal("registry too small")
		}
		for b.Loop() {
			if err := reg.Validate(PayloadResearchSummary, benchSummary); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("schema_after_lookup", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchSummary)))
		for b.Loop() {
			if err := s.Validate(benchSummary); err != nil {
				b.Fatal(err)
			}
		}
	})
	m := message(PayloadResearchSummary, string(benchSummary))
	m.SchemaRef = "schema://clutch/research/summary@1"
	b.Run("message", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := reg.ValidateMessage(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	invalid := []byte(`{"title":1,"findings":["a",2],"citations":"x"}`)
	b.Run("invalid_payload", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := reg.Validate(PayloadResearchSummary, invalid); err == nil {
				b.Fatal("valid?")
			}
		}
	})
}

// BenchmarkValidateRatio alternates blocks of raw gojsonschema and registry
// validations and reports registry time / raw time as "registry/raw", which
// other load on the machine affects far less than two separate benchmarks.
func BenchmarkValidateRatio(b *testing.B) {
	reg := benchRegistry(b, 1000)
	s, _ := reg.Lookup(PayloadResearchSummary)
	raw, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(s.JSON()))
	if err != nil {
		b.Fatal(err)
	}
	const block = 64
	var tRaw, tReg time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		for range block {
			if res, err := raw.Validate(gojsonschema.NewBytesLoader(benchSummary)); err != nil || !res.Valid() {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for range block {
			if err := reg.Validate(PayloadResearchSummary, benchSummary); err != nil {
				b.Fatal(err)
			}
		}
		t2 := time.Now()
		tRaw += t1.Sub(t0)
		tReg += t2.Sub(t1)
	}
	b.ReportMetric(float64(tReg)/float64(tRaw), "registry/raw")
	b.ReportMetric(float64(tRaw.Nanoseconds())/float64(b.N*block), "raw-ns/validate")
	b.ReportMetric(float64(tReg.Nanoseconds())/float64(b.N*block), "registry-ns/validate")
}

// BenchmarkValidateStep measures a bound run's check: step lookup,
// expects.required and the schema.
func BenchmarkValidateStep(b *testing.B) {
	reg := newRegistry(b, nil)
	wf, err := reg.LoadWorkflow([]byte(seedWorkflow))
	if err != nil {
		b.Fatal(err)
	}
	binder := NewBinder(reg)
	m := message(PayloadResearchSummary, string(benchSummary))
	if err := binder.Bind(m.RunID, wf); err != nil {
		b.Fatal(err)
	}
	defer binder.Unbind(m.RunID)
	b.ReportAllocs()
	for b.Loop() {
		if err := binder.ValidateMessage(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRegister measures registering one more type into a registry
// of 1,000 (compile, checks, copy-on-write swap).
func BenchmarkRegister(b *testing.B) {
	reg := benchRegistry(b, 1000)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		if err := reg.Register(fmt.Sprintf("bench.extra%d.v1", i), []byte(`{"type":"object","required":["findings"],"properties":{"findings":{"type":"array","items":{"type":"string"}}}}`)); err != nil {
			b.Fatal(err)
		}
	}
}

// benchResult is a typical task result: a research.summary.v1 payload of
// about 1 KiB (8 findings, 6 citations).
var benchResult = func() []byte {
	var v ResearchSummary
	v.Title = "Fintech lending: market analysis complete"
	for i := range 8 {
		v.Findings = append(v.Findings, fmt.Sprintf("Finding %d: the segment grew %d%% in 2025, led by embedded lending and SME credit lines", i+1, 8+i))
	}
	for i := range 6 {
		v.Citations = append(v.Citations, fmt.Sprintf("https://example.com/reports/fintech-2025/section-%d", i+1))
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}()

// BenchmarkValidateResult measures what validating one task result costs:
// a ~1 KiB research.summary.v1 payload through Registry.ValidateMessage
// (schema_ref check, one decode, gojsonschema).
func BenchmarkValidateResult(b *testing.B) {
	reg := newRegistry(b, nil)
	m := message(PayloadResearchSummary, string(benchResult))
	m.SchemaRef = "schema://clutch/research/summary@1"
	if n := len(benchResult); n < 900 || n > 1200 {
		b.Fatalf("payload is %d bytes, want about 1 KiB", n)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(benchResult)))
	for b.Loop() {
		if err := reg.ValidateMessage(m); err != nil {
			b.Fatal(err)
		}
	}
}
