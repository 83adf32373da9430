package demo

import "github.com/clutchprotocol/clutch/protocol"

// The rounds' script. Round i plays asks[i%len(asks)]. An ask is what the
// UI wants researched (its query is the run's title), the tracks the lead
// splits it into, what the lead asks the requester first, and the faults
// of the fake tools. Faults are looked up by a track's query, so nothing
// in the events says they are staged.

// question is what the lead asks the requester before it starts.
type question int

const (
	noQuestion question = iota
	// askRegion: which region the brief covers (choices).
	askRegion
	// askPaid: approval of a paid market-data query.
	askPaid
)

type ask struct {
	query   string // the run's title
	text    string // what the UI says in the thread
	channel string // meta.ui_channel
	// tempo scales this ask's durations (1: the base of agents.go).
	tempo    float64
	question question
	tracks   []track
}

// track is one research subtask of the lead's fan-out.
type track struct {
	agent string // the researcher it is meant for (by its tag)
	query string // the subtask's query
	// what the lead calls it in its messages ("the volume figures").
	what string
	// needed: the lead cannot write the brief without it.
	needed bool
	// paid: only run when the requester approves the paid query (askPaid).
	paid     bool
	findings []string
	fault    *fault
}

// fault is a tool failure a researcher meets on the track: retryable
// ones on the first attempt only (the retry succeeds), others on every
// attempt.
type fault struct {
	code      protocol.Code
	message   string
	retryable bool
}

var asks = []ask{
	{
		query:   "Nordic payments: who leads real-time rails?",
		text:    "Who leads real-time payment rails in the Nordics? I need a short brief for Thursday's board pack.",
		channel: "chat:markets", tempo: 1,
		tracks: []track{
			{agent: Ken, query: "Real-time payment rails in the Nordics: operators and schemes", what: "the web research",
				findings: []string{"Each Nordic country runs its own instant-payment scheme, with a cross-border rail being built", "Mobile wallets owned by bank consortia carry most person-to-person volume"},
				fault:    &fault{protocol.CodeRateLimited, "search: 429 Too Many Requests, retry after 1 s", true}},
			{agent: Dara, query: "Instant-payment volumes in Denmark, Finland, Norway and Sweden", what: "the volume figures", needed: true,
				findings: []string{"Instant payments are the majority of account-to-account transfers in two of the four countries", "Volumes grew by double digits a year since 2021"}},
		},
	},
	{
		query:   "Telehealth in rural clinics: is it sticking?",
		text:    "Is telehealth actually sticking in rural clinics, or was it a pandemic blip?",
		channel: "chat:research", tempo: 1.1, question: askRegion,
		tracks: []track{
			{agent: Ines, query: "Rural telehealth adoption after 2020: peer-reviewed evidence", what: "the literature review",
				findings: []string{"Studies find video visits settled well above pre-2020 levels, mostly for follow-ups and mental health", "Broadband gaps remain the most cited barrier"}},
			{agent: Ken, query: "Telehealth reimbursement rules for rural clinics", what: "the reimbursement rules",
				findings: []string{"Temporary reimbursement waivers were extended several times", "Audio-only visits are covered in more places than before"}},
			{agent: Dara, query: "Telehealth visit counts in rural clinics", what: "the visit counts",
				findings: []string{"Telehealth's share of rural visits fell from its peak but stayed several times the 2019 level"},
				fault:    &fault{protocol.CodeToolUnavailable, "market-data: connection reset by peer", true}},
		},
	},
	{
		query:   "Open banking in the EU: what changes with PSD3?",
		text:    "What changes for open banking in the EU with PSD3? Keep it to the essentials.",
		channel: "chat:markets", tempo: 0.9,
		tracks: []track{
			{agent: Ken, query: "PSD3 and the Payment Services Regulation: what changes for open banking", what: "the web research",
				findings: []string{"Dedicated access interfaces become mandatory and screen scraping a fallback only", "Permission dashboards let customers see and revoke access"},
				fault:    &fault{protocol.CodeRateLimited, "search: 429 Too Many Requests, retry after 1 s", true}},
			{agent: Ines, query: "Academic analyses of PSD2 outcomes and PSD3 proposals", what: "the academic sources",
				findings: []string{"Reviews of PSD2 point to uneven API quality across banks"},
				fault:    &fault{protocol.CodeToolUnavailable, "papers: the index is offline for maintenance", false}},
		},
	},
	{
		query:   "Wearables for remote patient monitoring: who pays?",
		text:    "Who pays for wearables in remote patient monitoring — insurers, hospitals or patients?",
		channel: "chat:research", tempo: 1, question: askPaid,
		tracks: []track{
			{agent: Ines, query: "Remote patient monitoring with wearables: evidence on outcomes and cost", what: "the literature review",
				findings: []string{"Trials show fewer readmissions for heart failure patients monitored at home", "Evidence is thinner for other conditions"},
				fault:    &fault{protocol.CodeTimeout, "papers: the search timed out after 10 s", true}},
			{agent: Ken, query: "Reimbursement codes and payers for remote patient monitoring", what: "the payer research",
				findings: []string{"Dedicated billing codes pay for device supply and monthly review time", "Employers and insurers increasingly bundle devices into care programmes"}},
			{agent: Dara, query: "Remote patient monitoring claims by payer type", what: "the paid claims data", paid: true,
				findings: []string{"Public insurers account for most monitoring claims, private insurers for most growth"}},
		},
	},
	{
		query:   "Stablecoins for B2B cross-border payments: ready yet?",
		text:    "Are stablecoins ready for B2B cross-border payments? The CFO wants numbers, not opinions.",
		channel: "chat:markets", tempo: 1,
		tracks: []track{
			{agent: Ken, query: "Stablecoin use in B2B cross-border payments: providers and pilots", what: "the web research",
				findings: []string{"Several payment firms settle supplier payouts in stablecoins in pilots", "Banks cite reserve transparency and licensing as the blockers"},
				fault:    &fault{protocol.CodeRateLimited, "search: 429 Too Many Requests, retry after 1 s", true}},
			{agent: Dara, query: "B2B cross-border payment volumes settled in stablecoins", what: "the volume figures", needed: true,
				fault: &fault{protocol.CodeToolFailed, "market-data: no licence for the dataset b2b-fx-volumes", false}},
		},
	},
	{
		query:   "Battery storage: which grid markets pay best?",
		text:    "Which grid markets pay best for battery storage right now?",
		channel: "chat:research", tempo: 1.2,
		tracks: []track{
			{agent: Ken, query: "Grid services revenue for battery storage by market", what: "the market research",
				findings: []string{"Frequency response paid best early on, and prices fell as batteries crowded in", "Revenue is shifting to energy arbitrage and capacity contracts"}},
			{agent: Ines, query: "Studies of battery storage revenue stacking", what: "the literature review",
				findings: []string{"Studies agree that stacking several services is what makes projects pay"},
				fault:    &fault{protocol.CodeTimeout, "papers: the search timed out after 10 s", true}},
			{agent: Dara, query: "Ancillary service prices by grid market", what: "the price data",
				findings: []string{"Ancillary prices vary several-fold between markets and years"}},
		},
	},
}

// regions are the choices of askRegion.
var regions = []string{"Nordics", "United States", "Both"}

// faults maps a track's query to its fault.
var faults = func() map[string]*fault {
	m := map[string]*fault{}
	for _, a := range asks {
		for _, tr := range a.tracks {
			if tr.fault != nil {
				m[tr.query] = tr.fault
			}
		}
	}
	return m
}()

// askFor returns the scripted ask of query, or a plain one for a query
// the script does not know (one asked through AG-UI): the web and the
// literature, no faults, no question.
func askFor(query string) *ask {
	for i := range asks {
		if asks[i].query == query {
			return &asks[i]
		}
	}
	return &ask{query: query, tempo: 1, tracks: []track{
		{agent: Ken, query: query, what: "the web research",
			findings: []string{"Recent news and company reports agree on the main trend", "Two providers announced changes this quarter"}},
		{agent: Ines, query: query, what: "the literature review",
			findings: []string{"Published studies support the trend, with caveats on small samples"}},
	}}
}
