package rulesmcp

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// ErrInvalidOptions: Tools was given options it cannot use (a negative
// MaxSessions). Match it with errors.Is; its code is INVALID_FIELD.
var ErrInvalidOptions error = coded.New("rulesmcp: invalid options", protocol.CodeInvalidField)
