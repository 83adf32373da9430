package adapters

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
)

func TestMemoryIndexEvictsOldest(t *testing.T) {
	ctx := context.Background()
	x := NewMemoryIndex(2)
	x.Remember(ctx, "a", Link{TaskID: "1"})
	x.Remember(ctx, "b", Link{TaskID: "2"})
	x.Remember(ctx, "a", Link{TaskID: "10"}) // an update is not a new key
	x.Remember(ctx, "c", Link{TaskID: "3"})  // evicts a, the oldest key
	_, ok := x.Lookup(ctx, "a")
	assert.False(t, ok, "a survived eviction")
	l, ok := x.Lookup(ctx, "b")
	assert.True(t, ok)
	assert.Equal(t, "2", l.TaskID)
	l, ok = x.Lookup(ctx, "c")
	assert.True(t, ok)
	assert.Equal(t, "3", l.TaskID)
}

func TestMemoryIndexConcurrent(t *testing.T) {
	ctx := context.Background()
	x := NewMemoryIndex(100)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				k := strconv.Itoa(g*1000 + i)
				x.Remember(ctx, k, Link{TaskID: k})
				x.Lookup(ctx, k)
			}
		})
	}
	wg.Wait()
	n := 0
	for i := range 4000 {
		if _, ok := x.Lookup(ctx, strconv.Itoa(i)); ok {
			n++
		}
	}
	assert.Equal(t, 100, n, "keys remembered")
}

func TestLinks(t *testing.T) {
	ctx := context.Background()
	l := NewLinks(nil)

	// A reply to an unknown message lands in the task its request starts.
	assert.Equal(t, "task:m1", l.TaskOf(ctx, "m1"))
	assert.Equal(t, "", l.KindOf(ctx, "task:m1"))

	req := &protocol.Message{ID: "m1", RunID: "run:c", ThreadID: "c", TaskID: "task:m1"}
	l.Remember(ctx, req, "search")
	done := &protocol.Message{ID: "m2", RunID: "run:c", ThreadID: "c", TaskID: "task:m1"}
	l.Remember(ctx, done, "search")
	got, ok := l.Lookup(ctx, "m2")
	require.True(t, ok)
	assert.Equal(t, Link{RunID: "run:c", ThreadID: "c", TaskID: "task:m1", Kind: "search"}, got)
	// A message answering m2 (not a request) joins m2's task.
	assert.Equal(t, "task:m1", l.TaskOf(ctx, "m2"))
	assert.Equal(t, "search", l.KindOf(ctx, "task:m1"))
	assert.Equal(t, "", l.KindOf(ctx, "run:c"), "not a task an outside request started")

	// The first introduction registers; a re-sent one is still the first;
	// a later one (another message) is not.
	assert.False(t, l.Registered(ctx, "agent:a", "task:caps1"))
	l.Register(ctx, "agent:a", "task:caps1")
	assert.False(t, l.Registered(ctx, "agent:a", "task:caps1"))
	assert.True(t, l.Registered(ctx, "agent:a", "task:caps2"))
	l.Register(ctx, "agent:a", "task:caps2")
	assert.True(t, l.Registered(ctx, "agent:a", "task:caps2"), "Register keeps the first introduction")
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Research Agent (EU)": "research-agent-eu",
		"  __x.y__  ":         "__x.y__",
		"Ünïcode":             "n-code",
		"!!!":                 "",
		"":                    "",
		"api.example.com":     "api.example.com",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Slug(strings.Repeat("a", 300)); len(got) != MaxSlug {
		t.Errorf("Slug of 300 bytes has %d", len(got))
	}
}
