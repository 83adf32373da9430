package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

func init() {
	register(&command{
		name:    "tree",
		summary: "print a run's task tree (or a task's subtree)",
		usage:   "clutch tree [flags] RUN_ID | clutch tree [flags] --task TASK_ID",
		help: `Rebuilds the task tree of a run from its events (router.Replay) and prints
one line per task: its id, status, agent, attempts and payload type, children
indented under their parent. With --task, only the subtree of that task. A run
or task that does not exist exits 3; a run without tasks prints "(no tasks)".

--json prints the gateway's tree: {"run_id": ID, "tasks": [node...]}, a node
being {"task_id", "parent_task_id", "agent_id", "status", "state", "attempts",
"payload_type", "started", "ended", "error": {"code", "message", ...},
"children": [node...]} (empty members left out).`,
		examples: `  clutch tree run_01JD3Z...
  clutch tree --task task_01JD3Z... --json
  clutch tree --url http://127.0.0.1:8080 --key $KEY run_01JD3Z...`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			task := fs.String("task", "", "print the subtree of this task instead of a run's tree")
			asJSON := fs.Bool("json", false, "print the tree as JSON (the gateway's tree shape)")
			return func(ctx context.Context, e *env, args []string) error {
				run := ""
				switch {
				case len(args) == 1 && *task == "":
					run = args[0]
				case len(args) == 0 && *task != "":
				default:
					return usagef("want one RUN_ID, or --task TASK_ID")
				}
				src, err := w.open()
				if err != nil {
					return err
				}
				defer src.close()
				t, err := src.tree(ctx, run, *task)
				if err != nil {
					return err
				}
				if *asJSON {
					return writeJSON(e.stdout, t)
				}
				printTree(e.stdout, t)
				return nil
			}
		},
	})
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// tree of a file: router.Replay, in the gateway's shape. A task with
// events but no place in the tree (no task.request) has an empty one.
func (l *local) tree(ctx context.Context, runID, taskID string) (*client.Tree, error) {
	if taskID != "" {
		for ev, err := range l.st.Read(ctx, store.Query{TaskID: taskID, Limit: 1}) {
			if err != nil {
				return nil, err
			}
			m, err := ev.Message()
			if err != nil {
				return nil, err
			}
			runID = m.RunID
		}
		if runID == "" {
			return nil, notFound("task", taskID)
		}
	} else if ok, err := l.exists(ctx, "run", runID); err != nil || !ok {
		return nil, cmp.Or(err, notFound("run", runID))
	}
	rt, err := router.Replay(ctx, l.st, runID)
	if err != nil {
		return nil, err
	}
	t := treeOf(rt)
	if taskID != "" {
		node := find(t.Tasks, taskID)
		t.Tasks = []*client.TreeNode{}
		if node != nil {
			t.Tasks = append(t.Tasks, node)
		}
	}
	return t, nil
}

func find(nodes []*client.TreeNode, id string) *client.TreeNode {
	for _, n := range nodes {
		if n.TaskID == id {
			return n
		}
		if f := find(n.Children, id); f != nil {
			return f
		}
	}
	return nil
}

func treeOf(rt *router.Tree) *client.Tree {
	t := &client.Tree{RunID: rt.RunID, Tasks: []*client.TreeNode{}}
	for _, n := range rt.Roots {
		t.Tasks = append(t.Tasks, nodeOf(n))
	}
	return t
}

// nodeOf converts a replayed task as the gateway's tree answer does.
func nodeOf(n *router.TaskNode) *client.TreeNode {
	out := &client.TreeNode{
		TaskID: n.TaskID, ParentTaskID: n.ParentTaskID, AgentID: n.Agent, State: n.State,
		Attempts: n.Attempts, Children: []*client.TreeNode{},
	}
	if n.Request != nil {
		out.PayloadType = n.Request.PayloadType
		if ts, err := n.Request.Time(); err == nil {
			out.Started = &ts
		}
	}
	var end protocol.Type
	if n.Outcome != nil {
		end, out.Error = n.Outcome.Type, n.Outcome.Err
		if n.Outcome.Message != nil {
			if ts, err := n.Outcome.Message.Time(); err == nil {
				out.Ended = &ts
			}
		}
	}
	out.Status = store.TaskStatus(n.State, end)
	for _, c := range n.Children {
		out.Children = append(out.Children, nodeOf(c))
	}
	return out
}

func printTree(w io.Writer, t *client.Tree) {
	fmt.Fprintf(w, "run %s\n", clean(t.RunID))
	if len(t.Tasks) == 0 {
		fmt.Fprintln(w, "  (no tasks)")
	}
	var walk func(nodes []*client.TreeNode, prefix string)
	walk = func(nodes []*client.TreeNode, prefix string) {
		for i, n := range nodes {
			branch, next := "├─ ", "│  "
			if i == len(nodes)-1 {
				branch, next = "└─ ", "   "
			}
			line := prefix + branch + clean(n.TaskID) + "  " + n.Status
			if n.AgentID != "" {
				line += "  " + clean(n.AgentID)
			}
			if n.Attempts > 1 {
				line += fmt.Sprintf("  attempts=%d", n.Attempts)
			}
			if n.PayloadType != "" {
				line += "  " + clean(n.PayloadType)
			}
			if n.Started != nil && n.Ended != nil {
				line += "  " + n.Ended.Sub(*n.Started).Round(time.Millisecond).String()
			}
			if n.Error != nil {
				line += "  " + clean(string(n.Error.Code)) + ": " + clean(clip(n.Error.Message, 80))
			}
			fmt.Fprintln(w, strings.TrimRight(line, " "))
			walk(n.Children, prefix+next)
		}
	}
	walk(t.Tasks, "")
}
