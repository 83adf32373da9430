//go:build !unix

package benchcpu

import "time"

// Process is not measured on this platform: it returns 0.
func Process() time.Duration { return 0 }
