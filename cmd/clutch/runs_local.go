package main

import (
	"context"
	"errors"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
)

func (l *local) runs(ctx context.Context, threads bool, before uint64, limit int) ([]client.Summary, uint64, error) {
	return nil, 0, errors.New("TODO: store.Runs")
}
