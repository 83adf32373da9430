package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/gateway"
	"github.com/clutchprotocol/clutch/protocol"
)

func init() {
	register(&command{
		name:    "submit",
		summary: "send a task request or a chat message through a gateway",
		usage: `clutch submit (--to AGENT | --capability CAP) [--payload-type T] [PAYLOAD | @FILE | -] [--wait [--timeout D]]
       clutch submit --text TEXT [--thread THREAD] [--to AGENT]`,
		help: `Sends a message through a running gateway (--url, --key), as the key's
caller: a task request, routed to the agent --to names or by capability
(--capability, repeatable: every one is required), with --payload-type and a
payload, a JSON object given as the argument, read from @FILE, or from stdin
with -; or a chat message, --text, in --thread (a new thread when not given).
It prints the ids the gateway accepted: the task, its run and thread, and the
stored message.

--wait then follows the task until it ends and prints how: the result's
payload (exit 0); the error's code and message on stderr (exit 1), as for a
cancelled or timed-out task; or the question the task waits on, with the
'clutch answer' command that answers it (exit 0: the task has not failed, it
waits for a person). --timeout bounds the wait (0: until it ends or Ctrl-C);
past it the command fails and the task runs on.

A --run or --thread that belongs to another caller (or to the system) is not
found: exit code 3. A store file has no router to run a task, so submit needs
--url.`,
		examples: `  clutch submit --url http://127.0.0.1:8080 --key $KEY --to agent:ken --payload-type research.query.v1 '{"query":"Nordic payments"}'
  clutch submit --capability skill:research @query.json --wait --timeout 2m
  echo '{"query":"x"}' | clutch submit --to agent:ken - --wait --json
  clutch submit --text "Can someone check the Q3 numbers?" --thread thr_01JD3Z...`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			to := fs.String("to", "", "the agent that gets the request (or the chat message)")
			var caps stringList
			fs.Var(&caps, "capability", "route by this capability id (repeatable; every one is required)")
			payloadType := fs.String("payload-type", "", "the request's payload_type (e.g. research.query.v1)")
			text := fs.String("text", "", "send a chat message with this text instead of a request")
			thread := fs.String("thread", "", "the thread_id (a new one when not given)")
			run := fs.String("run", "", "the run_id (a new one when not given)")
			idem := fs.String("idempotency-key", "", "a request sent again with the same key is the same task")
			wait := fs.Bool("wait", false, "follow the task until it ends, and print how")
			timeout := fs.Duration("timeout", 0, "with --wait, give up after this long (0: no limit)")
			asJSON := fs.Bool("json", false, `print JSON: the accepted ids, with --wait {"accepted", "outcome"}`)
			return func(ctx context.Context, e *env, args []string) error {
				s := &gateway.Submission{RunID: *run, ThreadID: *thread, IdempotencyKey: *idem}
				if *to != "" {
					s.To = []protocol.Participant{{AgentID: *to}}
				}
				textSet := false
				fs.Visit(func(f *flag.Flag) { textSet = textSet || f.Name == "text" })
				switch {
				case len(args) > 1:
					return usagef("want at most one PAYLOAD (JSON, @FILE or -)")
				case textSet && (len(caps) > 0 || *payloadType != "" || len(args) > 0 || *wait):
					return usagef("--text sends a chat message: it takes no --capability, --payload-type, PAYLOAD or --wait")
				case textSet:
					s.Type = protocol.TypeChatMessage
					s.Payload, _ = json.Marshal(map[string]string{"text": *text})
				case *to == "" && len(caps) == 0:
					return usagef("want --to AGENT or --capability CAP (a task request), or --text TEXT (a chat message)")
				default:
					s.Type, s.PayloadType, s.Requires = protocol.TypeTaskRequest, *payloadType, caps
					if len(args) == 1 {
						p, err := readPayload(args[0], e.stdin)
						if err != nil {
							return err
						}
						s.Payload = p
					}
				}
				if *timeout < 0 {
					return usagef("--timeout must not be negative")
				}
				c, err := w.gateway("submit")
				if err != nil {
					return err
				}
				acc, err := c.Submit(ctx, s)
				if err != nil {
					return submitError(err, s)
				}
				if !*wait {
					if *asJSON {
						return writeJSON(e.stdout, acc)
					}
					printAccepted(e.stdout, acc)
					return nil
				}
				if !*asJSON {
					printAccepted(e.stdout, acc)
				}
				wctx := ctx
				if *timeout > 0 {
					var cancel context.CancelFunc
					wctx, cancel = context.WithTimeout(ctx, *timeout)
					defer cancel()
				}
				out, err := c.Wait(wctx, acc.TaskID, acc.Seq)
				if err != nil {
					if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
						return fmt.Errorf("task %s has not ended after %v; it runs on (follow it: clutch tail --task %s)", acc.TaskID, *timeout, acc.TaskID)
					}
					return err
				}
				return printOutcome(e, acc, out, *asJSON)
			}
		},
	})
	register(&command{
		name:    "cancel",
		summary: "cancel a running task and its subtasks, through a gateway",
		usage:   "clutch cancel TASK_ID [--reason R] [--json]",
		help: `Cancels a running task and its subtree through a running gateway (--url,
--key), as the key's caller: the task.cancel says "cancelled by <caller>:
<reason>". It prints how the task ended (a result that won the race is said as
such). A task that has ended already cannot be cancelled: exit code 1 with the
gateway's reason. A task that does not exist, or that the caller may not see,
is exit code 3.`,
		examples: `  clutch cancel task_01JD3Z... --reason "wrong market"
  clutch cancel --url http://127.0.0.1:8080 --key $KEY task_01JD3Z... --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			reason := fs.String("reason", "", "why, stored in the task.cancel")
			asJSON := fs.Bool("json", false, `print the gateway's answer ({"id","seq","run_id","thread_id","task_id","type"})`)
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 || args[0] == "" {
					return usagef("want one TASK_ID")
				}
				c, err := w.gateway("cancel")
				if err != nil {
					return err
				}
				acc, err := c.Cancel(ctx, args[0], *reason)
				if err != nil {
					return actError(err, "cancel", args[0])
				}
				if *asJSON {
					return writeJSON(e.stdout, acc)
				}
				switch acc.Type {
				case protocol.TypeTaskCancel:
					fmt.Fprintf(e.stdout, "cancelled task %s (run %s)\n", acc.TaskID, acc.RunID)
				case "":
					fmt.Fprintf(e.stdout, "cancelling task %s (run %s): its end is not stored yet\n", acc.TaskID, acc.RunID)
				default:
					fmt.Fprintf(e.stdout, "task %s ended with %s before the cancel (run %s)\n", acc.TaskID, acc.Type, acc.RunID)
				}
				return nil
			}
		},
	})
	register(&command{
		name:    "retry",
		summary: "run a failed or timed-out task again, through a gateway",
		usage:   "clutch retry TASK_ID [--json]",
		help: `Runs a task that ended with task.error or task.timeout again, as a new attempt
in the same run (a partial retry: the rest of the run stays as it is), through
a running gateway (--url, --key). A task that runs, completed or was cancelled
cannot be retried: exit code 1 with the gateway's reason. A task that does not
exist, or that the caller may not see, is exit code 3. Follow the new attempt
with 'clutch tail --task TASK_ID'.`,
		examples: `  clutch retry task_01JD3Z...
  clutch retry --url http://127.0.0.1:8080 --key $KEY task_01JD3Z... --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			asJSON := fs.Bool("json", false, `print the gateway's answer ({"run_id","thread_id","task_id"})`)
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 || args[0] == "" {
					return usagef("want one TASK_ID")
				}
				c, err := w.gateway("retry")
				if err != nil {
					return err
				}
				acc, err := c.Retry(ctx, args[0])
				if err != nil {
					return actError(err, "retry", args[0])
				}
				if *asJSON {
					return writeJSON(e.stdout, acc)
				}
				fmt.Fprintf(e.stdout, "retrying task %s as a new attempt (run %s)\n", acc.TaskID, acc.RunID)
				return nil
			}
		},
	})
}

// gateway returns the client of the gateway w names: the acting commands
// have no file mode, since a file has no router to act.
func (w *where) gateway(cmd string) (*client.Client, error) {
	if w.url == "" {
		return nil, usagef("%s goes through the gateway of a running process: want --url (or $CLUTCH_URL); a store file has no router to run it", cmd)
	}
	if w.key == "" {
		w.key = os.Getenv("CLUTCH_API_KEY")
	}
	return client.New(w.url, w.key, nil)
}

// submitError is the error of submit: a run or thread the command line
// names that the caller may not write into is not found (exit 3), as the
// gateway answers it ("no run run_X": another caller's, or reserved).
func submitError(err error, s *gateway.Submission) error {
	var ge *client.Error
	if !errors.As(err, &ge) || ge.Status != http.StatusNotFound {
		return err
	}
	for _, n := range [...]struct{ kind, id string }{{"run", s.RunID}, {"thread", s.ThreadID}} {
		if n.id != "" && ge.Message == "no "+n.kind+" "+n.id {
			return notFound(n.kind, n.id)
		}
	}
	return err
}

// actError is the error of cancel or retry: not found (exit 3), or the
// gateway's reason for a conflict.
func actError(err error, verb, taskID string) error {
	var ge *client.Error
	if errors.As(err, &ge) && ge.Code == protocol.CodeConflict {
		return fmt.Errorf("cannot %s: %s", verb, ge.Message)
	}
	return notFoundAs(err, "task", taskID)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(s string) error {
	if s == "" {
		return errors.New("must not be empty")
	}
	*l = append(*l, s)
	return nil
}

// maxPayload bounds a payload read from a file or stdin: the gateway
// refuses bigger bodies anyway (its default body limit).
const maxPayload = gateway.DefaultMaxBodyBytes

// readPayload reads the PAYLOAD argument: JSON, @FILE or - (stdin). It
// must be a JSON object.
func readPayload(arg string, stdin io.Reader) ([]byte, error) {
	var b []byte
	switch {
	case arg == "-":
		if stdin == nil {
			stdin = os.Stdin
		}
		var err error
		if b, err = io.ReadAll(io.LimitReader(stdin, maxPayload+1)); err != nil {
			return nil, fmt.Errorf("reading the payload from stdin: %w", err)
		}
	case strings.HasPrefix(arg, "@"):
		f, err := os.Open(arg[1:])
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if b, err = io.ReadAll(io.LimitReader(f, maxPayload+1)); err != nil {
			return nil, err
		}
	default:
		b = []byte(arg)
	}
	if len(b) > maxPayload {
		return nil, usagef("the payload is over %d bytes", maxPayload)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return nil, usagef("the payload must be a JSON object (as an argument, @FILE or - for stdin)")
	}
	return b, nil
}

// printAccepted says what the gateway accepted.
func printAccepted(out io.Writer, acc *gateway.Accepted) {
	again := ""
	if acc.Duplicate {
		again = " (sent before: this is the first one)"
	}
	if acc.Type == protocol.TypeChatMessage {
		fmt.Fprintf(out, "sent message %s in thread %s (run %s)%s\n", acc.ID, acc.ThreadID, acc.RunID, again)
		return
	}
	fmt.Fprintf(out, "submitted task %s (run %s, thread %s, message %s)%s\n", acc.TaskID, acc.RunID, acc.ThreadID, acc.ID, again)
}

// wireOutcome is the "outcome" of submit --wait --json.
type wireOutcome struct {
	Type     protocol.Type          `json:"type"`
	Seq      uint64                 `json:"seq"`
	ID       string                 `json:"id"`
	Result   json.RawMessage        `json:"result,omitempty"`
	Error    *protocol.ErrorPayload `json:"error,omitempty"`
	Question *protocol.Question     `json:"question,omitempty"`
}

// printOutcome prints how a task ended (or what it waits on); a task that
// did not complete is errFailed, said on stderr.
func printOutcome(e *env, acc *gateway.Accepted, out *client.Outcome, asJSON bool) error {
	m, err := protocol.Decode(out.Event.Message)
	if err != nil {
		return err
	}
	if asJSON {
		w := wireOutcome{Type: out.Type, Seq: out.Event.Seq, ID: m.ID, Error: out.Err, Question: out.Question}
		if out.OK() {
			w.Result = json.RawMessage(out.Payload)
		}
		if err := writeJSON(e.stdout, map[string]any{"accepted": acc, "outcome": w}); err != nil {
			return err
		}
	}
	switch {
	case out.OK():
		if !asJSON {
			fmt.Fprintf(e.stdout, "task %s completed:\n", acc.TaskID)
			var buf bytes.Buffer
			if json.Indent(&buf, out.Payload, "", "  ") != nil {
				buf.Write(out.Payload)
			}
			fmt.Fprintln(e.stdout, buf.String())
		}
		return nil
	case out.Question != nil:
		if !asJSON {
			q := out.Question
			text := q.Text
			if len(q.Choices) > 0 {
				text += " [" + strings.Join(q.Choices, " | ") + "]"
			}
			how := "VALUE"
			if q.Kind == protocol.QuestionApproval {
				how = "--approve (or --reject REASON, --edit JSON)"
			}
			fmt.Fprintf(e.stdout, "task %s waits on question %s: %s\nanswer it: clutch answer %s %s\n", acc.TaskID, q.ID, clean(text), q.ID, how)
		}
		return nil
	}
	what := map[protocol.Type]string{protocol.TypeTaskCancel: "was cancelled", protocol.TypeTaskTimeout: "timed out"}[out.Type]
	if what == "" {
		what = "failed"
	}
	fmt.Fprintf(e.stderr, "clutch submit: task %s %s: %s: %s\n", acc.TaskID, what, out.Err.Code, clean(out.Err.Message))
	return errFailed
}
