package adapters

import (
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
)

func TestValidForeignID(t *testing.T) {
	for _, c := range []struct {
		id   string
		want bool
	}{
		{"", true},
		{"msg-1", true},
		{"ctx é 日本", true},
		{strings.Repeat("a", protocol.MaxIDLength), true},
		{strings.Repeat("a", protocol.MaxIDLength+1), false},
		{"a\nb", false},
		{"a\x7fb", false},
		{"a\u0085b", false},
		{"a\xffb", false},
	} {
		if got := ValidForeignID(c.id); got != c.want {
			t.Errorf("ValidForeignID(%q) = %v, want %v", c.id, got, c.want)
		}
	}
}
