package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/keyfile"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

func init() {
	register(&command{
		name:    "verify",
		summary: "check message signatures against a key file",
		usage:   "clutch verify --keys FILE [flags]",
		help: `Checks the Ed25519 signature (docs/protocol.md §6.1) of every signed event that
matches the filters, over the bytes as stored, against the keys the key file
lists for the event's sender (from.agent_id): a key of another agent does not
count. Prints one line per failure and a summary; exits 1 when a signature
fails, or with --require-signed when an event is unsigned.

The key file is a JSON object from agent id to that agent's keys:

  {"agent:ui":  [{"kid": "key_ui_01", "public_key": "<32 bytes, base64url>"}],
   "agent:ken": [{"kid": "key_ken_01", "alg": "ed25519", "public_key": "..."}]}

public_key is base64url without padding (as in an AgentCard) or standard
base64; alg, when present, must be ed25519.`,
		examples: `  clutch verify --keys keys.json
  clutch verify --keys keys.json --run run_01JD3Z... --require-signed
  clutch verify --keys keys.json --url http://127.0.0.1:8080 --key $KEY`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			f := addFilters(fs)
			keys := fs.String("keys", "", "the key file (required)")
			requireSigned := fs.Bool("require-signed", false, "count an unsigned event as a failure")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				if *keys == "" {
					return usagef("--keys FILE is required")
				}
				k, err := keyfile.Load(*keys)
				if err != nil {
					return err
				}
				src, err := w.open()
				if err != nil {
					return err
				}
				defer src.close()
				r, err := verify(ctx, src, f.query(), k, func(ev store.Event, m *protocol.Message, err error) {
					from := ""
					if m != nil {
						from = m.From.AgentID
					}
					fmt.Fprintf(e.stdout, "FAIL %d %s %s: %v\n", ev.Seq, clean(idOf(m)), clean(from), err)
				}, *requireSigned)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "%d events: %d signatures valid, %d failed, %d unsigned\n", r.events, r.valid, r.failed, r.unsigned)
				if r.failed > 0 || (*requireSigned && r.unsigned > 0) {
					return errFailed
				}
				return nil
			}
		},
	})
}

func idOf(m *protocol.Message) string {
	if m == nil {
		return "?"
	}
	return m.ID
}

type verifyResult struct{ events, valid, failed, unsigned int }

func verify(ctx context.Context, src source, q store.Query, k *keyfile.Keys, fail func(store.Event, *protocol.Message, error), requireSigned bool) (verifyResult, error) {
	var r verifyResult
	for ev, err := range src.read(ctx, q) {
		if err != nil {
			return r, err
		}
		r.events++
		m, err := ev.Message()
		if err != nil {
			r.failed++
			fail(ev, nil, err)
			continue
		}
		if m.Security == nil || m.Security.Auth == nil {
			r.unsigned++
			if requireSigned {
				fail(ev, m, fmt.Errorf("unsigned"))
			}
			continue
		}
		if err := k.Verify(ev.Raw, m.From.AgentID); err != nil {
			r.failed++
			fail(ev, m, err)
			continue
		}
		r.valid++
	}
	return r, nil
}
