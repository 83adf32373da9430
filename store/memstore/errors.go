package memstore

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// ErrInvalidOptions: New was given options it cannot use.
var ErrInvalidOptions error = coded.New("memstore: invalid options", protocol.CodeInvalidField)
