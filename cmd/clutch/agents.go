package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
)

func init() {
	register(&command{
		name:    "agents",
		summary: "list the registered agents, or show one agent's card",
		usage:   "clutch agents [AGENT_ID] [--json]",
		help: `Lists the agents of the registry, sorted by id: id, name, status (online or
offline), tasks in flight and capabilities. With AGENT_ID, shows that agent's
card: name, description, status, capabilities with their tags and tools,
limits, endpoints and signing keys.

In flight counts the agent's running tasks (of its card's limit), and recent
success is the share of its last tasks that succeeded in the running process
(100% before any).

On a file the registry is rebuilt from its events (agent.register, update,
heartbeat, removal), read-only: no process runs there, so in flight is 0, an
agent that ran inside the process that wrote the file is offline, and an
agent in another process is online while its last heartbeat is within the
registry's TTL. Through a gateway (--url) it is that process's registry,
live (the key needs the agents scope).

--json prints {"agents": [{"card", "online", "in_flight", "success_rate"}]}
(the API's shape), or with AGENT_ID the card alone. An unknown AGENT_ID is
exit code 3.`,
		examples: `  clutch agents
  clutch agents agent:ken
  clutch agents --url http://127.0.0.1:8080 --key $KEY --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			asJSON := fs.Bool("json", false, `print JSON ({"agents": [...]}, or the card)`)
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 1 {
					return usagef("want at most one AGENT_ID")
				}
				src, err := w.open()
				if err != nil {
					return err
				}
				defer src.close()
				list, err := src.(agentLister).agents(ctx)
				if err != nil {
					return err
				}
				if len(args) == 1 {
					for _, a := range list {
						if a.Card.AgentID == args[0] {
							if *asJSON {
								return writeJSON(e.stdout, a.Card)
							}
							printCard(e.stdout, a)
							return nil
						}
					}
					return notFound("agent", args[0])
				}
				if *asJSON {
					return writeJSON(e.stdout, map[string]any{"agents": list})
				}
				printAgents(e.stdout, list)
				return nil
			}
		},
	})
}

// agentEntry is one agent of the registry, the shape of GET /v1/agents.
type agentEntry struct {
	Card        *protocol.AgentCard `json:"card"`
	Online      bool                `json:"online"`
	InFlight    int                 `json:"in_flight"`
	SuccessRate float64             `json:"success_rate"`
}

// agentLister is what agents reads: a file and a gateway both are.
type agentLister interface {
	// agents returns the registered agents, sorted by id.
	agents(ctx context.Context) ([]agentEntry, error)
}

var (
	_ agentLister = (*local)(nil)
	_ agentLister = (*remote)(nil)
)

// agents of a file: the registry rebuilt from its events. registry.Open
// only reads the store.
func (l *local) agents(ctx context.Context) ([]agentEntry, error) {
	reg, err := registry.Open(ctx, l.st, nil)
	if err != nil {
		return nil, err
	}
	out := []agentEntry{}
	for _, a := range reg.List() {
		out = append(out, agentEntry{Card: a.Card(), Online: reg.Online(a), InFlight: a.InFlight(), SuccessRate: a.SuccessRate()})
	}
	return out, nil
}

// agents of a gateway: GET /v1/agents, each card decoded strictly.
func (r *remote) agents(ctx context.Context) ([]agentEntry, error) {
	list, err := r.c.Agents(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]agentEntry, 0, len(list))
	for _, a := range list {
		card, err := protocol.DecodeAgentCard(a.Card)
		if err != nil {
			return nil, fmt.Errorf("the gateway sent an agent card that does not decode: %w", err)
		}
		out = append(out, agentEntry{Card: card, Online: a.Online, InFlight: a.InFlight, SuccessRate: a.SuccessRate})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Card.AgentID < out[j].Card.AgentID })
	return out, nil
}

func printAgents(out io.Writer, list []agentEntry) {
	if len(list) == 0 {
		fmt.Fprintln(out, "(no agents)")
		return
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tNAME\tSTATUS\tIN FLIGHT\tCAPABILITIES")
	for _, a := range list {
		caps := make([]string, 0, len(a.Card.Capabilities))
		for _, c := range a.Card.Capabilities {
			caps = append(caps, c.ID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", clean(a.Card.AgentID), clean(clip(agentName(a.Card), 40)), agentStatus(a),
			agentInFlight(a), clean(clip(strings.Join(caps, ", "), 80)))
	}
	tw.Flush()
}

// agentName is the card's display name, or "-".
func agentName(c *protocol.AgentCard) string {
	if c.Display != nil && c.Display.Name != "" {
		return c.Display.Name
	}
	return "-"
}

func agentStatus(a agentEntry) string {
	if a.Online {
		return "online"
	}
	return "offline"
}

// agentInFlight is the tasks in flight, of the card's limit when it has one.
func agentInFlight(a agentEntry) string {
	n := strconv.Itoa(a.InFlight)
	if l := a.Card.Limits; l != nil && l.MaxConcurrency > 0 {
		n += "/" + strconv.Itoa(l.MaxConcurrency)
	}
	return n
}

// printCard shows one agent's card for a person.
func printCard(out io.Writer, a agentEntry) {
	c := a.Card
	fmt.Fprintf(out, "%s  %s\n", clean(c.AgentID), clean(agentName(c)))
	if c.Display != nil && c.Display.Desc != "" {
		fmt.Fprintf(out, "  %s\n", clean(c.Display.Desc))
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "status\t%s, %s in flight, recent success %d%%\n", agentStatus(a), agentInFlight(a), int(a.SuccessRate*100+0.5))
	fmt.Fprintf(tw, "card version\t%s\n", clean(c.V))
	if l := c.Limits; l != nil {
		var parts []string
		if l.MaxConcurrency > 0 {
			parts = append(parts, "at most "+strconv.Itoa(l.MaxConcurrency)+" tasks at once")
		}
		if l.MaxRuntimeSec > 0 {
			parts = append(parts, strconv.Itoa(l.MaxRuntimeSec)+" s per task")
		}
		if len(parts) > 0 {
			fmt.Fprintf(tw, "limits\t%s\n", strings.Join(parts, ", "))
		}
	}
	if s := c.Security; s != nil && s.Network != "" {
		fmt.Fprintf(tw, "network\t%s\n", clean(s.Network))
	}
	eps := make([]string, 0, len(c.Endpoints))
	for k := range c.Endpoints {
		eps = append(eps, k)
	}
	sort.Strings(eps)
	for _, k := range eps {
		fmt.Fprintf(tw, "endpoint\t%s %s\n", clean(k), clean(c.Endpoints[k].URL))
	}
	if s := c.Security; s != nil {
		for _, k := range s.Keys {
			fmt.Fprintf(tw, "signing key\t%s (%s)\n", clean(k.Kid), clean(k.Alg))
		}
	}
	tw.Flush()
	if len(c.Capabilities) == 0 {
		fmt.Fprintln(out, "capabilities: none")
		return
	}
	fmt.Fprintln(out, "capabilities:")
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, cp := range c.Capabilities {
		var parts []string
		if cp.Version != "" {
			parts = append(parts, "version "+cp.Version)
		}
		if len(cp.Tags) > 0 {
			parts = append(parts, "tags "+strings.Join(cp.Tags, ", "))
		}
		if len(cp.Tools) > 0 {
			parts = append(parts, "tools "+strings.Join(cp.Tools, ", "))
		}
		if len(cp.Servers) > 0 {
			parts = append(parts, "servers "+strings.Join(cp.Servers, ", "))
		}
		if cp.TrustLevel != "" {
			parts = append(parts, "trust "+cp.TrustLevel)
		}
		if cp.CostHint != "" {
			parts = append(parts, "cost "+cp.CostHint)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", clean(cp.ID), clean(strings.Join(parts, "; ")))
	}
	tw.Flush()
}
