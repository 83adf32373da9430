package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/keyfile"
	"github.com/clutchprotocol/clutch/internal/coded"
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
base64; alg, when present, must be ed25519. A --run, --thread or --task that
does not exist exits 3; filters that leave no event verify nothing and exit 0.

--json prints {"events", "valid", "failed", "unsigned", "failures": [{"seq",
"id", "agent", "code", "message"}]} instead (failures is [] when none; the exit
code is the same).`,
		examples: `  clutch verify --keys keys.json
  clutch verify --keys keys.json --run run_01JD3Z... --require-signed
  clutch verify --keys keys.json --since 24h --json
  clutch verify --keys keys.json --url http://127.0.0.1:8080 --key $KEY`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			f := addFilters(fs)
			keys := fs.String("keys", "", "the key file (required)")
			requireSigned := fs.Bool("require-signed", false, "count an unsigned event as a failure")
			asJSON := fs.Bool("json", false, "print the result as JSON")
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
				failures := []verifyFailure{}
				r, err := verify(ctx, src, f.query(), k, func(ev store.Event, m *protocol.Message, err error) {
					vf := verifyFailure{Seq: ev.Seq, ID: idOf(m), Code: protocol.CodeOf(err), Message: err.Error()}
					if m != nil {
						vf.Agent = m.From.AgentID
					}
					if *asJSON {
						failures = append(failures, vf)
						return
					}
					fmt.Fprintf(e.stdout, "FAIL %d %s %s: %v\n", ev.Seq, clean(vf.ID), clean(vf.Agent), err)
				}, *requireSigned)
				if err != nil {
					return err
				}
				if *asJSON {
					err = writeJSON(e.stdout, verifyReport{Events: r.events, Valid: r.valid, Failed: r.failed, Unsigned: r.unsigned, Failures: failures})
				} else {
					_, err = fmt.Fprintf(e.stdout, "%d events: %d signatures valid, %d failed, %d unsigned\n", r.events, r.valid, r.failed, r.unsigned)
				}
				if err != nil {
					return err
				}
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

// verifyReport is what verify --json prints.
type verifyReport struct {
	Events   int             `json:"events"`
	Valid    int             `json:"valid"`
	Failed   int             `json:"failed"`
	Unsigned int             `json:"unsigned"`
	Failures []verifyFailure `json:"failures"`
}

// verifyFailure is an event that failed: its seq, message id ("?" when
// it does not decode), sender, and the error's code and text.
type verifyFailure struct {
	Seq     uint64        `json:"seq"`
	ID      string        `json:"id"`
	Agent   string        `json:"agent,omitempty"`
	Code    protocol.Code `json:"code"`
	Message string        `json:"message"`
}

// errUnsigned is an unsigned event with --require-signed: a missing
// signature (BAD_SIGNATURE).
var errUnsigned error = coded.New("unsigned", protocol.CodeBadSignature)

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
				fail(ev, m, errUnsigned)
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
