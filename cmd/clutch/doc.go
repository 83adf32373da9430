// Command clutch inspects, tails, exports and serves Clutch event stores,
// and answers the questions tasks wait on.
//
//	clutch serve   --db clutch.db --addr 127.0.0.1:8080 [--demo] [--retain-max-age AGE] [--retain-max-runs N] [--retain-max-bytes SIZE]
//	clutch runs    [--threads] [--status S] [--agent A] [--since T] [--until T] [--system] [--limit N] [--before SEQ] [--json]
//	clutch tail    [--run R] [--thread T] [--task K] [--agent A] [--type P] [--since T] [--until T] [--after SEQ] [-n N] [--json]
//	clutch tree    RUN_ID | --task TASK_ID [--json]
//	clutch replay  RUN_ID [--type P] [--speed X] [--json]
//	clutch export  [filters] [--format jsonl|cloudevents] [--out FILE]
//	clutch import  --db FILE [--dry-run] [--resume] INPUT|-
//	clutch verify  --keys KEYFILE [filters] [--require-signed] [--json]
//	clutch stats   [filters] [--system] [--json]
//	clutch check   [--json]
//	clutch backup  [--db FILE] --out BACKUP [--json]
//	clutch restore --from BACKUP [--db FILE] [--force]
//	clutch compact [--db FILE] [--json]
//	clutch prune   [--db FILE] [--max-age AGE] [--max-runs N] [--max-bytes SIZE] [--archive DIR [--format F]] [--dry-run] [--json]
//	clutch rules   list|drafts|show|approve|reject|import|export [ARG] [--author A] [--reason R] [--json]
//	clutch waiting [--mine] [--json] --url URL
//	clutch answer  QUESTION_ID VALUE | --approve | --reject REASON | --edit JSON  --url URL
//	clutch agents  [AGENT_ID] [--json]
//	clutch get     EVENT_ID|SEQ [--json]
//	clutch submit  (--to AGENT | --capability CAP) [--payload-type T] [PAYLOAD|@FILE|-] [--wait [--timeout D]] [--json] --url URL
//	clutch submit  --text TEXT [--thread T] [--json] --url URL
//	clutch cancel  TASK_ID [--reason R] [--json] --url URL
//	clutch retry   TASK_ID [--json] --url URL
//	clutch context add|ls|use|show|rm [NAME] [--url URL] [--key-file F | --key-env VAR | --key K] [--db FILE]
//	clutch completion bash|zsh|fish
//	clutch version [--json]
//
// Every command has --help with its flags and examples.
//
// # Answers and exit codes
//
// Exit codes:
//
//	0  ok; an empty result is ok too
//	1  failure: the command says why on stderr, or prints what failed (a
//	   signature, a damaged file)
//	2  usage: an unknown command or flag, a missing or malformed argument
//	3  not found: the run, thread, task (or other id) named on the command
//	   line does not exist, or the caller may not see it
//
// A read command gives the same answer to the same question whether it
// reads a file (--db) or a gateway (--url): the same stdout and the same
// exit code. What is named and missing is exit 3 with
// `clutch CMD: run "run_X" not found` (the kind, the quoted id) on stderr,
// in both modes: tree's RUN_ID or --task, replay's RUN_ID, and the --run,
// --thread and --task filters of tail, export, stats and verify (each must
// have an event; together they may still select none). A gateway's 404
// is that answer: a run another caller owns is not found, as it would be
// if it did not exist. An empty result is exit 0 and says so: "(no runs)",
// "(no threads)", "(no events)" (tail that does not follow, replay before
// the tree), "(no tasks)" (tree), zero counts (stats, verify); with --json
// an empty list ({"runs": [], ...}, "failures": []) or, for JSON lines, no
// line; export writes no line.
//
// # Filters
//
// tail, export, stats and verify take the event filters --run, --thread,
// --task, --agent (the sender, from.agent_id), --type (a type prefix),
// --after SEQ, and --since and --until: an RFC 3339 time
// (2026-03-01T09:00:00Z) or a duration meaning that long ago (90m, 24h),
// selecting the events the store appended at or after --since and before
// --until. Times are compared to the millisecond, the precision the
// gateway serves, so both modes select the same events. tail with --until
// does not follow.
//
// runs filters the summaries: --status (running, completed, failed,
// cancelled, timed_out or active, the Summary status), --agent (the agent
// that started the run, or one of the first 8 that accepted its tasks,
// which is what a summary keeps) and --since/--until (runs active in that
// time: the last event at or after --since, the first before --until).
// Over a gateway these filters are applied by the CLI, reading further
// pages until a page of --limit runs is full; next_before goes on from
// there, in both modes alike.
//
// System runs — the reserved ids of docs/protocol.md §6.7, such as the
// registry's run_registry and the rules library's runs — are left out of
// runs (and their threads of runs --threads) and of stats' counts unless
// --system is given (stats counts them too when a filter names one). Over
// a gateway --system sends ?system=1 to /v1/runs and /v1/threads; the
// gateway lists them only to an admin's key. tail, export, replay, tree,
// verify and check show everything the source holds.
//
// # JSON output
//
// Every command that prints data takes --json:
//
//	runs    {"runs"|"threads": [summary...], "next_before": SEQ}, each summary the
//	        store's Summary (id, run_id, owner, channel, title, first_seq, last_seq,
//	        created, updated, events, bytes, tasks, ended, waiting, status, agents,
//	        agents_more, failure); next_before 0 on the last page
//	tail    JSON lines {"seq","time","message"} (the export format)
//	replay  the same JSON lines, and no tree
//	tree    {"run_id", "tasks": [node...]}, a node {"task_id", "parent_task_id",
//	        "agent_id", "status", "state", "attempts", "payload_type", "started",
//	        "ended", "error", "children": [node...]}, the gateway's tree
//	stats   {"events", "event_bytes", "first_seq", "last_seq", "first", "last",
//	        "runs", "threads", "tasks", "agents", "by_type", "by_agent",
//	        "undecodable", "file_bytes"}; first and last left out when no event
//	        counts, file_bytes a file's alone
//	verify  {"events", "valid", "failed", "unsigned", "failures": [{"seq", "id",
//	        "agent", "code", "message"}]}
//	check   {"ok", "source", "events", "damage"}
//
// Times in JSON are RFC 3339 in UTC, to the millisecond. export writes
// its formats (below); --json does not apply to it. The exit code is the
// same with and without --json.
//
// # Answering
//
// waiting and answer work through a running gateway (--url, --key as
// below): a question is answered to the process whose task waits on it
// (docs/protocol.md §2.7). waiting lists the questions the key's caller
// may see (--mine: those it may answer); answer stores the caller's answer
// and the task runs on. An answer the gateway refuses (not a choice, not
// the caller's to give, answered already) fails with its reason and stores
// nothing.
//
// # Acting
//
// agents and get read, a file or a gateway alike; submit, cancel and
// retry act, through a gateway only (--url, --key as below): a store file
// has no router to run a task, so on a file they are a usage error saying
// to use --url.
//
//   - agents lists the registry's agents (id, name, online or offline,
//     tasks in flight of the card's limit, capabilities); agents AGENT_ID
//     shows one card. On a file the registry is rebuilt read-only from its
//     events (registry.Open only reads): nothing runs there, so an agent
//     that ran inside the writing process is offline and none has a task
//     in flight. Through a gateway it is GET /v1/agents, live. --json is
//     {"agents": [{"card", "online", "in_flight", "success_rate"}]}, the
//     API's shape, or with AGENT_ID the card.
//   - get prints one event by its message id or, when the argument is a
//     decimal number, by its seq (GET /v1/events/{id} through a gateway,
//     which serves only an event of a run, thread or task the caller may
//     read): the line tail prints, then the message indented; --json the
//     export line {"seq","time","message"}.
//   - submit sends a task.request as the key's caller: to the agent of
//     --to, or by capability (--capability, repeatable, AND-ed), with
//     --payload-type and a payload that is a JSON object (the argument,
//     @FILE, or - for stdin); or, with --text, a chat.message
//     {"text": TEXT} in --thread (or a new one). It prints the accepted
//     ids: task, run, thread and the stored message. --wait follows the
//     task on the live stream until it ends: a result prints its payload
//     (exit 0); an error, a cancel or a timeout prints its code and message
//     on stderr (exit 1); a task that waits on a question prints the
//     question and the 'clutch answer' command that answers it (exit 0:
//     it waits for a person, it has not failed). --timeout bounds the
//     wait; past it submit fails (exit 1) and the task runs on. --json
//     prints the gateway's Accepted, or with --wait
//     {"accepted": Accepted, "outcome": {"type", "seq", "id", "result" |
//     "error" | "question"}}.
//   - cancel TASK_ID [--reason R] cancels a running task and its subtree
//     (POST /v1/tasks/{id}/cancel); the task.cancel says "cancelled by
//     <caller>: R". retry TASK_ID runs a task that failed or timed out
//     again as a new attempt (POST /v1/tasks/{id}/retry). A task that has
//     ended (cancel), or that runs, completed or was cancelled (retry),
//     is refused: exit 1 with the gateway's reason.
//
// An AGENT_ID, EVENT_ID, SEQ or TASK_ID that does not exist, or that the
// key's caller may not see, is exit code 3 with the same text in both
// modes (clutch get: event "msg_X" not found); so is a --run or --thread
// of submit that belongs to another caller or to the system.
//
// # Where commands read
//
// The read commands (runs, tail, tree, replay, export, verify, stats,
// check) read either
//
//   - a store file, --db (default $CLUTCH_DB, else clutch.db), opened
//     read-only with a shared lock (boltstore.Options.ReadOnly): several
//     readers may share a file, nothing is written to it, and a process
//     that has it open for writing excludes them: after --lock-timeout
//     the command fails, naming the file and saying to use --url; or
//   - a running gateway, --url (default $CLUTCH_URL), with the API key
//     --key (default $CLUTCH_API_KEY), through the gateway's /v1 API. The
//     caller sees what its key's scopes allow.
//
// Over a gateway, tail follows the live stream (Server-Sent Events,
// resumed from the last seq after a disconnect, so no event is missed or
// repeated); reads of a run, thread or task page its events; reads of the
// whole log (export, stats, verify, check without a filter) read the
// stream from the start up to the last seq of the runs the caller sees
// (every message has a run_id). The gateway serves each message as the
// bytes it stores, except that its stream compacts a message stored with
// line breaks inside (and JSON cannot keep white space around a value):
// such a message arrives with the same content and the same signature
// (signatures cover the canonical form, docs/protocol.md §6.1) but not
// byte for byte; export the file itself where that matters.
//
// A store file cannot grow while it is held read-only, so tail on a file
// prints and exits. check over a gateway
// checks what it serves (increasing seqs, strict decoding, no repeated
// id); the page-level check needs the file. import writes a file and has
// no gateway mode: the API stamps the caller as the sender, so the stored
// bytes, and their signatures, could not be kept.
//
// # Backup and restore
//
// clutch backup --db FILE --out BACKUP writes a consistent copy of a store
// file (boltstore's Store.BackupFile: one read transaction copied by
// bbolt, to a new file beside BACKUP, synced, renamed in place, mode
// 0600). It opens the file for writing, so that the store records the
// backup's time (clutch stats: last backup); when other readers hold the
// file it opens it read-only instead, and says the backup was not
// recorded. A process that has the file open for writing (clutch serve, a
// host) holds it exclusively: the command fails after --lock-timeout, and
// that process backs its store up itself, calling BackupFile on a timer,
// while it keeps appending. There is no backup through a gateway.
//
// clutch restore --from BACKUP --db FILE copies the backup beside FILE,
// checks the copy as clutch check does (the store's Check) and only then
// renames it over FILE (mode 0600); a backup that fails the check is
// refused, naming the damage, and nothing changes. An existing FILE is
// refused unless --force, and never replaced while a process has it open
// for writing. The restored store holds every event up to the backup's
// last seq, and appends and follows on from there.
//
// clutch compact --db FILE rewrites a store file no process has open
// without its free pages (boltstore's Store.Compact: bbolt's copy to
// FILE.compact, synced, renamed in place) and prints its size before and
// after; a process that has the file open compacts it itself, online.
// clutch prune applies a retention policy (package store/retention) to a
// file no process has open: the ended runs older than --max-age, or past
// the newest --max-runs, then the oldest until the runs' events take at
// most --max-bytes (bytes, or K, M, G, T: powers of 1024), are removed,
// each archived first with --archive (the export format, one file a run),
// and leave a tombstone; --dry-run lists them and changes nothing.
// Reading a removed run then exits 3 and says what became of it, by file
// and by gateway alike: `run "run_X" was removed at 2026-11-29T08:00:00Z
// by policy "max_age=720h0m0s"`.
// clutch stats prints, besides its counts, a "store" block: the store's
// size and free space, events, oldest event, and last compaction and
// backup (store.UsageOf; through a gateway GET /v1/store, read:all).
//
// # Contexts
//
// A named context saves where commands read, as `nats context` does: a
// gateway's URL and where its key comes from, or a store file, or both.
//
//	clutch context add prod --url https://clutch.example.com --key-file ~/.clutch/prod.key --use
//	clutch context add local --db ~/team/clutch.db --description "the laptop's store"
//	clutch context ls [--json | --names]
//	clutch context use NAME | --none
//	clutch context show [NAME] [--json]
//	clutch context rm NAME
//
// Every command with --url (the read commands, rules, waiting, answer)
// takes --context NAME and uses the named context's url, key and db where
// neither the flag nor its variable gives a value:
//
//	flag > variable ($CLUTCH_URL, $CLUTCH_API_KEY, $CLUTCH_DB)
//	     > --context NAME, else $CLUTCH_CONTEXT > the current context (context use)
//	     > the default (clutch.db)
//
// Each value is taken on its own (--url with a context's key is a tunnel
// to the context's gateway), with one exception: a --db or $CLUTCH_DB means
// the file, so the context's url is then not used (and --url "" reads the
// file of a context that has both). The key is read when the
// command uses a gateway, each time: from the file the context names
// (trimmed of white space), from the variable it names, or from the config
// file itself when it was added with --key. A context that cannot give its
// key fails the command with the context's name and why (`context "prod":
// $PROD_KEY is not set`); so does a --context or $CLUTCH_CONTEXT naming no
// context (exit 1: the command cannot choose where to read). context use,
// show and rm of a NAME no context has exit 3, as any name on the command
// line that does not exist. ls and show never print a key, only where it
// comes from.
//
// The contexts live in $CLUTCH_CONFIG, else clutch/config.json in
// os.UserConfigDir (~/.config on Linux), a JSON object:
//
//	{
//	  "current": "prod",
//	  "contexts": {
//	    "prod":  {"url": "https://clutch.example.com", "key_file": "/home/me/.clutch/prod.key"},
//	    "ci":    {"url": "http://127.0.0.1:8080", "key_env": "CI_CLUTCH_KEY", "description": "the CI gateway"},
//	    "local": {"db": "/home/me/team/clutch.db"}
//	  }
//	}
//
// Each context has a url and/or a db and at most one of key_file, key_env
// and key; paths are stored absolute. A name is letters, digits and _ . -
// (at most 64). The file is read strictly (an unknown or repeated member is
// an error that names its place) and written whole to a temporary file that
// is renamed over it, readable by its owner only (0600, its folder 0700).
// Two commands that change the file at the same moment: the last one wins.
//
// # Completion
//
// clutch completion bash|zsh|fish prints a script that completes the
// commands, their subcommands (rules, context, completion) and their flags,
// generated from the command table and each command's flags, so a new
// command or flag is covered without a change to the scripts. After
// --context, and after context use, show and rm, it offers the context
// names, which it gets by running `clutch context ls --names`. A flag's
// value completes as a file name.
//
//	source <(clutch completion bash)                                 # ~/.bashrc
//	source <(clutch completion zsh)                                  # ~/.zshrc, after compinit
//	clutch completion fish > ~/.config/fish/completions/clutch.fish
//
// version prints the module version; version --json prints
// {"version", "go", "commit"}, commit (and "modified": true after it for a
// build from a changed checkout) when the build recorded it.
//
// # Export formats
//
// JSON lines, one event per line in the gateway's event shape:
//
//	{"seq":12,"time":"2026-11-26T08:00:00.123Z","message":{...the envelope as stored...}}
//
// CloudEvents 1.0, structured JSON, one event per line (--format
// cloudevents):
//
//	specversion      "1.0"
//	id               the message id
//	source           "/runs/" + the run_id (path-escaped)
//	type             "io.github.clutchprotocol." + the message type, e.g. io.github.clutchprotocol.task.result
//	subject          the task_id
//	time             the message's ts
//	datacontenttype  "application/json"
//	data             the envelope as stored
//	clutchseq        the event's seq in the exported store (an extension attribute)
//
// Both write each message as the exact bytes the store holds. Bytes that
// cannot sit on one line unchanged (a line break inside, white space
// around) go base64-encoded in "message_base64" / "data_base64" instead.
// import reads either format, or a mix, line by line; it decodes every
// message strictly and, for a CloudEvent, requires its id and type to
// match the message.
//
// # Import
//
// import appends the messages in input order to --db (created if needed),
// --batch per transaction, keeping their bytes, so signatures verify
// afterwards. The events get that store's seqs and append times. The
// store's deduplication (by id and by run_id + idempotency_key) makes a
// repeated import append nothing: the duplicates are counted, so an
// interrupted import can simply be run again.
//
// An import is all or nothing by default: it reads the whole input once,
// decoding every line strictly and validating every message as the
// store's Append would (protocol.Message.Validate and the store's size
// limit), and only then reads it again and appends. A bad line fails the
// import with its line number and stores nothing. This is a two-pass read
// rather than one transaction of every message, so that memory stays flat
// whatever the input's size (a transaction would hold all of it): a file
// is read again from its start; stdin, or a pipe, is copied to a temporary
// file beside --db while it is read the first time (removed at the end).
// The store is opened, and held, before the first pass, so a file another
// process holds fails at once. The checks are those of the input: a store
// that fails in the second pass (a full disk) leaves the batches appended
// before it, which the error counts and a rerun skips as duplicates.
//
// A new store file is made under a temporary name beside --db (mode 0600,
// as every store file) and linked to --db when the import succeeds, so a
// failed import leaves no file behind (after a kill -9 the temporary
// .NAME.import-* file may be left; delete it). An existing --db is never
// replaced.
//
// --resume is the one-pass import: it appends as it reads, and a bad line
// stops it with every line before it stored (and counted in the error);
// fix the line and run it again, the stored events are skipped as
// duplicates.
//
// --dry-run reads the input once, checks it as the import would, and
// prints how many events would be appended and how many are duplicates,
// writing nothing: a missing --db is not created, an existing one is
// opened read-only. Its duplicates are those by id, of an earlier line or
// of a stored event, and those by run_id + idempotency_key of an earlier
// line; a stored event with the same key but another id is found only by
// the import itself, so the import may skip more. It keeps the ids it has
// seen in memory (tens of bytes an event). A --db that another process
// holds is not read: the dry run then says that duplicates of its events
// are not counted.
//
// export --out writes a temporary file beside FILE, mode 0600 (events may
// carry what users said), and renames it to FILE when the export is
// complete, so FILE is whole or as it was; a FILE that is a pipe or a
// device is written in place.
//
// # Key file
//
// verify checks the Ed25519 signature of each signed event (docs/protocol.md
// §6.1), over its stored bytes, against the keys a key file lists for the
// event's sender. The key file is a JSON object from agent id to a list of
// keys, each in the AgentCard key form:
//
//	{
//	  "agent:ui":  [{"kid": "key_ui_01", "public_key": "<32 bytes, base64url without padding>"}],
//	  "agent:ken": [{"kid": "key_ken_01", "alg": "ed25519", "public_key": "<standard base64 works too>"}]
//	}
//
// alg may be left out and must otherwise be "ed25519"; a kid is unique per
// agent. A signature by a key listed for another agent fails (UNKNOWN_KEY):
// which keys speak for which agent is exactly what the file states. Unsigned
// events are counted, and fail only with --require-signed.
//
// # Serve
//
// serve opens the store file for writing, starts a router over it (tasks a
// previous process left open end as interrupted: Router.Recover) and
// serves package gateway on --addr: the /v1 API, the live streams (SSE,
// WebSocket), the rules library of --rules-workspace at /v1/rules (package
// rules/rulesapi) and the web UI (package gateway/ui) at /. --agui-agent
// AGENT mounts AG-UI (package gateway/agui) at /v1/agui, each run submitted
// to AGENT. Ctrl-C (or SIGTERM) stops it: streams are given 5 s, the router
// finishes its tasks, the file is closed.
//
// API keys come from any of (all those given count):
//
//   - --keys-file FILE: a JSON object of key → {"agent_id", "scopes"}. It
//     holds secrets, so it must be readable by its owner only (mode 0600,
//     no group or other bits; not checked on Windows): serve refuses
//     another mode, saying "chmod 600 FILE", and refuses a file that does
//     not parse or names an unknown scope or a key shorter than 16
//     characters, naming the file and what is wrong.
//   - $CLUTCH_SERVE_KEYS: keys separated by commas or white space, each KEY
//     (the caller agent:operator, an admin) or AGENT=KEY (an admin named
//     AGENT). A process's environment is readable by its user only.
//   - --key KEY or AGENT=KEY, repeatable, kept for compatibility: a command
//     line is visible to every user of the machine (ps, /proc/PID/cmdline),
//     so serve prints a one-line warning on stderr.
//
// serve does not read $CLUTCH_API_KEY, the key the other commands send to
// a gateway: a client's key in an operator's shell must not become an
// admin key of a server started there.
//
// With no key given, serve keeps one admin key (agent:operator) in the
// file --db + ".keys.json", in the --keys-file format, mode 0600, beside
// the store it protects: the first start makes the key, writes the file
// whole (a temporary file linked into place, never replacing one) and
// prints the key once; every later start uses it again and prints only
// where it is, so the UI, scripts and clutch --key keep working across
// restarts and the key does not reach logs again. That file is held to the
// --keys-file rules; a damaged one stops serve (remove it to make a new
// key). With keys given, serve neither reads nor makes it.
//
// # Demo
//
// serve --demo registers a demo team (no network, no API keys), mounts
// AG-UI for its lead, and plays research rounds one after another with
// --demo-every between them, at a pace a person can follow in the UI: a
// task takes 1 to 4 s, a round about 5 to 10. Each round is a run whose
// request's query is its title ("Nordic payments: who leads real-time
// rails?"): the lead (agent:lead) plans, delegates two or three research
// tracks at once and waits for all; each researcher (agent:ken, web;
// agent:ines, papers; agent:dara, market data) records a tool.call, its
// progress and the tool.result; one of them fails once with a retryable
// error and succeeds on the retry; the lead writes the brief and answers
// in the thread. Some rounds go wrong on purpose: a track fails and the
// lead goes on without it, or the brief needs it and the run fails with
// the track's code. Others ask the requester first — a choice of region,
// or the approval of a paid query — which the UI's key (or clutch
// answer) may answer; rounds go on meanwhile, and a question unanswered
// for 2 minutes ends its run with TIMEOUT. The agents' cards carry display
// names, descriptions, capability tags and tools.
//
// The demo's agents sign their events with Ed25519 keys serve makes at
// start (the router's own events and the registry's are unsigned). Their
// public keys are added to --demo-keys (default: the --db file's name +
// ".demo-keys.json"), in the key file format of verify, before the first
// round; the file keeps the keys of earlier starts, so
//
//	clutch verify --db clutch.db --keys clutch.db.demo-keys.json
//
// checks every signature the demo ever made in that store.
//
// With OTEL_EXPORTER_OTLP_ENDPOINT set, serve observes the router with
// package telemetry (spans per task attempt and tool call, metrics of the
// router and the store, the gateway's stream subscribers counted) and exports
// over OTLP/HTTP, configured by the standard OTEL_EXPORTER_OTLP_*
// variables; what is left is flushed when it stops. Without it nothing is
// exported. Either way a request with a W3C traceparent header carries
// the caller's trace context into the tasks it submits.
//
// # Rules
//
// rules works on the rules library of a store (package rules): list the
// published documents, list the open drafts agents proposed (with whether
// approving would conflict), show a document's text or a draft's (--draft,
// --base for the text it changes), approve a draft (published as a new
// version) or reject it with --reason, import a folder of markdown files
// and export the library to one. A draft is named by its id and, when
// several agents drafted that id, --author. Every subcommand goes through
// the HTTP surface of package rules/rulesapi: with --url, the gateway's
// /v1/rules (clutch serve mounts the library of --rules-workspace there),
// where the reviewer is the key's caller and approving, rejecting and
// importing need the admin scope; with --db, the same handler in process
// over the file's library (--workspace), opened read-only for list, drafts,
// show and export and for writing for approve, reject and import, whose
// events are sent as --as (default agent:operator).
//
// # Old files
//
// runs reads the store's run and thread summaries. A file written by a
// version without them has none until a process opens it for writing once
// (clutch import --db FILE /dev/null does); runs says so.
//
// # Dependencies
//
// Only the standard library beyond the module's own: flag with one
// FlagSet per command (flags may come before or after the arguments), and
// a progress line of a few lines of code (drawn on stderr only when it is
// a terminal, so output that is piped or captured never carries it) where
// a progress-bar library would add nothing the commands use. The one
// exception is serve's OTLP export: the OpenTelemetry SDK and its OTLP/HTTP
// exporters (go.opentelemetry.io/otel/sdk, .../exporters/otlp/...), the
// standard implementation of the API package telemetry builds on; the
// library packages depend on none of them.
package main
