package protocol

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// referenceCanonical is the canonicaliser Verify used before the streaming
// one: jsontext's RFC 8785 implementation. The fuzz targets compare the two.
func referenceCanonical(data []byte) ([]byte, error) {
	v := jsontext.Value(append([]byte(nil), data...))
	if err := v.Canonicalize(); err != nil {
		return nil, err
	}
	return v, nil
}

// referenceVerify is Verify as it was before the streaming canonicaliser:
// strict scan, then generic maps, then jsontext canonicalisation.
func referenceVerify(raw []byte, keys KeyResolver) error {
	if err := checkJSON(raw, ""); err != nil {
		return err
	}
	var top map[string]jsontext.Value
	if err := jsonv2.Unmarshal(raw, &top); err != nil {
		return err
	}
	member := func(obj map[string]jsontext.Value, name string) (map[string]jsontext.Value, error) {
		v, ok := obj[name]
		if !ok || v.Kind() != '{' {
			return nil, errors.New("no " + name)
		}
		var m map[string]jsontext.Value
		return m, jsonv2.Unmarshal(v, &m)
	}
	sec, err := member(top, "security")
	if err != nil {
		return err
	}
	auth, err := member(sec, "auth")
	if err != nil {
		return err
	}
	var scheme, kid, sig string
	for name, dst := range map[string]*string{"scheme": &scheme, "kid": &kid, "sig": &sig} {
		if v, ok := auth[name]; ok {
			if err := jsonv2.Unmarshal(v, dst); err != nil {
				return err
			}
		}
	}
	sigBytes, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if scheme != SchemeEd25519 || err != nil || len(sigBytes) != ed25519.SignatureSize {
		return errors.New("bad auth")
	}
	pub, err := keys.ResolveKey(kid)
	if err != nil {
		return err
	}
	delete(auth, "sig")
	b, _ := jsonv2.Marshal(auth)
	sec["auth"] = b
	b, _ = jsonv2.Marshal(sec)
	top["security"] = b
	b, _ = jsonv2.Marshal(top)
	canon, err := referenceCanonical(b)
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, canon, sigBytes) {
		return errors.New("signature does not match")
	}
	return nil
}

func canonSeeds(f *testing.F) {
	addFileSeeds(f, "jcs/input/*.json", "signed/*.json", "examples/*.json")
	for _, s := range []string{
		`{"b":1,"a":2,"\u00e9":3,"\ud83d\ude00":4,"\uffff":5,"":6}`,
		`[1e21,1e-7,123456789012345678,-0,0.1,1E400,-1e-400,5e-324,1.7976931348623157e308]`,
		`"\u0000\u001f\"\\\/\b\f\n\r\t\u2028 é"`,
		`{"a":{"c":[{"z":1,"y":2}],"b":null},"\n":true}`,
		`{"a":1,"a":2}`, `{"a":1}x`, `  {"a" : [ 1 , 2 ] }  `, `[`, ``,
		`100000000000000000000`, `1000000000000000`, `-999999999999999`, `0.000001`, `123e-20`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzCanonical: the streaming canonicaliser agrees with jsontext's on
// every input both accept, accepts only what jsontext accepts, and
// refuses what jsontext accepts only for the strict rules (depth) or a
// number beyond a double.
func FuzzCanonical(f *testing.F) {
	canonSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Canonical(data)
		want, rerr := referenceCanonical(data)
		switch {
		case err == nil && rerr == nil:
			if !bytes.Equal(got, want) {
				t.Fatalf("canonical forms differ for %q\n got %s\nwant %s", data, got, want)
			}
		case err == nil:
			t.Fatalf("accepted %q, which jsontext refuses: %v", data, rerr)
		case rerr == nil:
			c := CodeOf(err)
			if c != CodeTooDeep && !(c == CodeInvalidJSON && bytes.ContainsAny(data, "eE")) {
				t.Fatalf("refused %q, which jsontext accepts: %v", data, err)
			}
		}
	})
}

// FuzzVerify: Verify accepts exactly what the map-based verifier accepted,
// on signed messages and their mutations.
func FuzzVerify(f *testing.F) {
	priv := goldenKey()
	keys := StaticKeys{"key_test_01": priv.Public().(ed25519.PublicKey)}
	addFileSeeds(f, "signed/*.json")
	f.Add([]byte(`{"security":{"auth":{"scheme":"ed25519","kid":"key_test_01","sig":1}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Verify(data, keys)
		rerr := referenceVerify(data, keys)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("Verify = %v, reference = %v for %q", err, rerr, data)
		}
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
		}
	})
}

// TestCanonicalNumbers checks the ECMAScript number form on values around
// every boundary of its four cases, against strconv's shortest digits.
func TestCanonicalNumbers(t *testing.T) {
	for _, f := range []float64{
		1, -1, 0.5, 1e20, 1e21, 123456789012345680000, 1e-6, 1e-7, 0.000001234, 1.5e-7,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 2.5e-300, 9007199254740993, 333333333.33333329,
		1.0000000000000002, 4.35, 0.1 + 0.2,
	} {
		raw := strconv.FormatFloat(f, 'g', -1, 64)
		got, err := Canonical([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		want, err := referenceCanonical([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: got %s, want %s", raw, got, want)
		}
	}
	if _, err := Canonical([]byte(`1e400`)); !errors.Is(err, CodeInvalidJSON) {
		t.Fatalf("1e400: %v", err)
	}
}

func BenchmarkCanonical(b *testing.B) {
	m := benchMessage(b)
	raw, err := Encode(m)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("stream", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Canonical(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsontext", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := referenceCanonical(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
