package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/protocol"
)

func init() {
	register(&command{
		name:    "waiting",
		summary: "list the questions tasks wait on (people in the loop)",
		usage:   "clutch waiting [--mine] [--json] --url URL [--key KEY]",
		help: `Lists the questions that tasks of a running gateway wait on (docs/protocol.md
§2.7) and that the key's caller may see: those it may answer, and those of
tasks it may read. Each line is the question id, its task, who asked, whether
the caller may answer, the kind, and the text with its choices. --mine keeps
the questions the caller may answer. Answer one with 'clutch answer'.`,
		examples: `  clutch waiting --url http://127.0.0.1:8080 --key $KEY
  clutch waiting --mine --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			url, key := gatewayFlags(fs)
			mine := fs.Bool("mine", false, "only the questions the caller may answer")
			asJSON := fs.Bool("json", false, "print the API's JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 0 {
					return usagef("waiting takes no argument")
				}
				c, err := dial(*url, *key)
				if err != nil {
					return err
				}
				qs, err := c.Questions(ctx, *mine)
				if err != nil {
					return err
				}
				if *asJSON {
					enc := json.NewEncoder(e.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(qs)
				}
				if len(qs) == 0 {
					fmt.Fprintln(e.stdout, "no question waits")
					return nil
				}
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "QUESTION\tASKED BY\tYOURS\tKIND\tTEXT")
				for _, q := range qs {
					text := q.Question.Text
					if len(q.Question.Choices) > 0 {
						text += " [" + strings.Join(q.Question.Choices, " | ") + "]"
					}
					kind := q.Question.Kind
					if kind == "" {
						kind = protocol.QuestionAsk
					}
					yours := "no"
					if q.MayAnswer {
						yours = "yes"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", q.Question.ID, q.AskedBy, yours, kind, oneLine(text))
				}
				return tw.Flush()
			}
		},
	})
	register(&command{
		name:    "answer",
		summary: "answer a question a task waits on; the task runs on",
		usage:   "clutch answer QUESTION_ID [VALUE] [--approve | --reject REASON | --edit JSON] --url URL [--key KEY]",
		help: `Answers a question a task waits on (see 'clutch waiting'), as the key's
caller, through a running gateway: the answer is stored from the caller and the
task runs on. VALUE is JSON when it parses as JSON (12, true, {"a":1}), else a
string (fintech); --string takes it as a string always. An approval is answered
with --approve, --reject REASON or --edit JSON (the arguments to go on with).
A value that does not fit the question is refused and nothing is stored.`,
		examples: `  clutch answer task_01JD….q0 fintech
  clutch answer task_01JD….q1 --approve
  clutch answer task_01JD….q1 --reject "not this week"
  clutch answer task_01JD….q1 --edit '{"to":"team@example.com"}'`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			url, key := gatewayFlags(fs)
			approve := fs.Bool("approve", false, "approve (an approval)")
			reject := fs.String("reject", "", "reject with this reason (an approval)")
			edit := fs.String("edit", "", "approve with these arguments instead, JSON (an approval)")
			asString := fs.Bool("string", false, "take VALUE as a string, even when it parses as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				decisions := 0
				for _, set := range []bool{*approve, *reject != "", *edit != ""} {
					if set {
						decisions++
					}
				}
				var value json.RawMessage
				switch {
				case len(args) == 0 || len(args) > 2:
					return usagef("want QUESTION_ID and a VALUE, or QUESTION_ID and --approve, --reject or --edit")
				case decisions > 1:
					return usagef("--approve, --reject and --edit go one at a time")
				case decisions == 1 && len(args) == 2:
					return usagef("an approval takes --approve, --reject or --edit, not a VALUE")
				case decisions == 0 && len(args) == 1:
					return usagef("want a VALUE (or --approve, --reject, --edit for an approval)")
				case *approve:
					value, _ = json.Marshal(protocol.Approval{Decision: protocol.Approve})
				case *reject != "":
					value, _ = json.Marshal(protocol.Approval{Decision: protocol.Reject, Reason: *reject})
				case *edit != "":
					if !json.Valid([]byte(*edit)) {
						return usagef("--edit takes JSON: the arguments to go on with")
					}
					value, _ = json.Marshal(protocol.Approval{Decision: protocol.Edit, Arguments: json.RawMessage(*edit)})
				case *asString || !json.Valid([]byte(args[1])):
					value, _ = json.Marshal(args[1])
				default:
					value = json.RawMessage(args[1])
				}
				c, err := dial(*url, *key)
				if err != nil {
					return err
				}
				a, err := c.Answer(ctx, args[0], value)
				if err != nil {
					var ge *client.Error
					if errors.As(err, &ge) && ge.Status == 404 {
						return fmt.Errorf("%w\n(see 'clutch waiting' for the questions you may answer)", err)
					}
					return err
				}
				fmt.Fprintf(e.stdout, "answered %s; task %s runs on (run %s)\n", a.QuestionID, a.TaskID, a.RunID)
				return nil
			}
		},
	})
}

// gatewayFlags registers --url and --key for a command that needs a
// running gateway.
func gatewayFlags(fs *flag.FlagSet) (url, key *string) {
	url = fs.String("url", os.Getenv("CLUTCH_URL"), "the gateway of the running process ($CLUTCH_URL)")
	key = fs.String("key", "", "the gateway API key (default $CLUTCH_API_KEY)")
	bindContext(fs)
	return url, key
}

// dial returns the client of a gateway: url and key, or their defaults.
func dial(url, key string) (*client.Client, error) {
	if url == "" {
		return nil, usagef("want --url (or $CLUTCH_URL): questions are answered through the gateway of the running process")
	}
	if key == "" {
		key = os.Getenv("CLUTCH_API_KEY")
	}
	return client.New(url, key, nil)
}

// oneLine folds text onto one line for a table.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 100 {
		s = strings.ToValidUTF8(s[:97], "") + "..."
	}
	return s
}
