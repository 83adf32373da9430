// Package webhook is the generic HTTP webhook adapter (docs/protocol.md §7.3).
package webhook
