package memstore

import "errors"

// ErrInvalidOptions: New was given options it cannot use.
var ErrInvalidOptions = errors.New("memstore: invalid options")

type optionError struct{ detail string }

func (e *optionError) Error() string        { return ErrInvalidOptions.Error() + ": " + e.detail }
func (e *optionError) Is(target error) bool { return target == ErrInvalidOptions }
