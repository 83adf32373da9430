// Package coded is the one way the module's packages build errors: sentinel
// errors that carry a protocol.Code ([New]), and wrapping that keeps both
// the sentinel and the cause visible to errors.Is ([Wrap]). Each package
// declares its sentinels with New in its errors.go and wraps them with Wrap
// (or fmt.Errorf and %w); protocol.CodeOf reads the code of either.
// [Public] is the message of such an error for whoever is at the other
// end of a wire (an HTTP answer, an MCP tool error): the details each said
// once, without the Go package prefixes of the sentinels
// ([WithoutPrefixes]).
//
// The one exception is package protocol, which defines Code and so cannot
// import this package: its errors are all *protocol.Error values, each
// carrying a Code and matched by it (errors.Is(err, protocol.CodeTooLarge)),
// exactly as the sentinels built here are.
package coded
