package traceparent_test

import (
	"fmt"

	"github.com/clutchprotocol/clutch/internal/traceparent"
)

func Example() {
	tr, ok := traceparent.Parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	fmt.Println(ok, tr.TraceID, tr.SpanID)
	fmt.Println(traceparent.Format(tr))
	// Output:
	// true 4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7
	// 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
}
