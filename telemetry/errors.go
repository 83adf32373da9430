package telemetry

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// ErrInvalidOptions: New could not make its instruments with the meter
// provider it was given (the error wraps the provider's).
var ErrInvalidOptions error = coded.New("telemetry: invalid options", protocol.CodeInvalidField)

func wrap(sentinel error, detail string, cause error) error {
	return coded.Wrap(sentinel, detail, cause)
}
