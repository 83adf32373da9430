package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// ErrInvalidURL: New was given a base URL it cannot use.
var ErrInvalidURL error = coded.New("client: invalid gateway URL", protocol.CodeInvalidField)

// Client calls one gateway. It is safe for concurrent use.
type Client struct {
	base *url.URL
	key  string
	hc   *http.Client
}

// New returns a client of the gateway at baseURL (e.g.
// "http://127.0.0.1:8080", or with the prefix it is mounted under) that
// sends key as its API key. hc nil means http.DefaultClient.
func New(baseURL, key string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, coded.Wrap(ErrInvalidURL, strconv.Quote(baseURL)+" (want http://host:port)", err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: u, key: key, hc: hc}, nil
}

// Error is a non-2xx answer of the gateway.
type Error struct {
	Status    int            // the HTTP status
	Code      protocol.Code  // the protocol code of the body; INTERNAL when it has none
	Message   string         // the body's message, or the status text
	Retryable bool           // the body's retryable
	Details   map[string]any // the body's details
}

// Error returns the status, code and message.
func (e *Error) Error() string {
	return "gateway: " + strconv.Itoa(e.Status) + " " + string(e.Code) + ": " + e.Message
}

// ClutchCode returns the code, for protocol.CodeOf.
func (e *Error) ClutchCode() protocol.Code { return e.Code }

// Is matches the error's protocol code.
func (e *Error) Is(target error) bool {
	c, ok := target.(protocol.Code)
	return ok && c == e.Code
}

// Event is one event as the API serves it.
type Event struct {
	Seq     uint64         `json:"seq"`
	Time    time.Time      `json:"time"`
	Message jsontext.Value `json:"message"` // the envelope exactly as stored
}

// StoreEvent returns e as a store.Event.
func (e Event) StoreEvent() store.Event {
	return store.Event{Seq: e.Seq, Time: e.Time, Raw: []byte(e.Message)}
}

// Summary describes a run or a thread: the store's Summary, whose JSON
// the API serves.
type Summary = store.Summary

// Agent is one entry of GET /v1/agents.
type Agent struct {
	Card        jsontext.Value `json:"card"`
	Online      bool           `json:"online"`
	InFlight    int            `json:"in_flight"`
	SuccessRate float64        `json:"success_rate"`
}

// TreeNode is a task of a task tree.
type TreeNode struct {
	TaskID       string                 `json:"task_id"`
	ParentTaskID string                 `json:"parent_task_id,omitempty"`
	AgentID      string                 `json:"agent_id,omitempty"`
	Status       string                 `json:"status"` // pending, running, completed, failed, cancelled, timed_out
	State        protocol.Type          `json:"state"`  // the last lifecycle event
	Attempts     int                    `json:"attempts"`
	PayloadType  string                 `json:"payload_type,omitempty"`
	Started      *time.Time             `json:"started,omitempty"` // the request's ts
	Ended        *time.Time             `json:"ended,omitempty"`   // the terminal event's ts
	Error        *protocol.ErrorPayload `json:"error,omitempty"`   // how it failed
	Children     []*TreeNode            `json:"children"`
}

// Tree is a run's task tree, or a task's subtree (one root).
type Tree struct {
	RunID string      `json:"run_id"`
	Tasks []*TreeNode `json:"tasks"`
}

func (c *Client) url(path string, q url.Values) string {
	u := *c.base
	u.Path += path
	u.RawQuery = q.Encode()
	return u.String()
}

func (c *Client) request(ctx context.Context, path string, q url.Values) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(path, q), nil)
	if err != nil {
		return nil, err
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, errorOf(resp)
	}
	return resp, nil
}

func errorOf(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error struct {
			Code      protocol.Code  `json:"code"`
			Message   string         `json:"message"`
			Retryable bool           `json:"retryable"`
			Details   map[string]any `json:"details"`
		} `json:"error"`
	}
	out := &Error{Status: resp.StatusCode, Code: protocol.CodeInternal, Message: http.StatusText(resp.StatusCode)}
	if jsonv2.Unmarshal(body, &e) == nil && e.Error.Code != "" {
		out.Code, out.Message, out.Retryable, out.Details = e.Error.Code, e.Error.Message, e.Error.Retryable, e.Error.Details
	} else if resp.StatusCode == http.StatusUnauthorized {
		out.Code = protocol.CodeUnauthorized
	}
	return out
}

func (c *Client) get(ctx context.Context, path string, q url.Values, v any) error {
	resp, err := c.request(ctx, path, q)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	// Unknown members are ignored: a newer gateway may add some.
	if err := jsonv2.Unmarshal(body, v); err != nil {
		return coded.Wrap(errBadAnswer, path, err)
	}
	return nil
}

var errBadAnswer error = coded.New("client: the gateway's answer does not parse", protocol.CodeInvalidJSON)

func pageQuery(before uint64, limit int) url.Values {
	q := url.Values{}
	if before > 0 {
		q.Set("before", strconv.FormatUint(before, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

// ListQuery selects the summaries of ListRuns and ListThreads.
type ListQuery struct {
	// Before, when not 0, lists those whose last event is before this
	// seq: the next_before of the previous page.
	Before uint64
	// Limit is the most summaries of the page; 0 means the gateway's
	// default.
	Limit int
	// System asks for the reserved system runs and threads too
	// (docs/protocol.md §6.7; ?system=1), which a gateway lists only to
	// an admin's key. Without it they are left out.
	System bool
}

func (q ListQuery) values() url.Values {
	v := pageQuery(q.Before, q.Limit)
	if q.System {
		v.Set("system", "1")
	}
	return v
}

// Runs lists runs, newest first: those whose last event is before before
// (0: all), at most limit (0: the gateway's default). next is the before
// of the next page, 0 after the last. It is ListRuns without System.
func (c *Client) Runs(ctx context.Context, before uint64, limit int) (runs []Summary, next uint64, err error) {
	return c.ListRuns(ctx, ListQuery{Before: before, Limit: limit})
}

// ListRuns lists the runs q selects, newest first (GET /v1/runs). next is
// the Before of the next page, 0 after the last.
func (c *Client) ListRuns(ctx context.Context, q ListQuery) (runs []Summary, next uint64, err error) {
	var out struct {
		Runs []Summary `json:"runs"`
		Next uint64    `json:"next_before"`
	}
	err = c.list(ctx, "/v1/runs", q, &out)
	return out.Runs, out.Next, err
}

// Threads lists threads like Runs.
func (c *Client) Threads(ctx context.Context, before uint64, limit int) (threads []Summary, next uint64, err error) {
	return c.ListThreads(ctx, ListQuery{Before: before, Limit: limit})
}

// ListThreads lists threads like ListRuns (GET /v1/threads).
func (c *Client) ListThreads(ctx context.Context, q ListQuery) (threads []Summary, next uint64, err error) {
	var out struct {
		Threads []Summary `json:"threads"`
		Next    uint64    `json:"next_before"`
	}
	err = c.list(ctx, "/v1/threads", q, &out)
	return out.Threads, out.Next, err
}

// list gets a listing. A gateway older than the system parameter refuses
// it (400, naming it); it lists the system runs to an admin anyway, so
// the listing is asked for again without it.
func (c *Client) list(ctx context.Context, path string, q ListQuery, v any) error {
	err := c.get(ctx, path, q.values(), v)
	var e *Error
	if q.System && errors.As(err, &e) && e.Status == http.StatusBadRequest && strings.Contains(e.Message, "system") {
		q.System = false
		err = c.get(ctx, path, q.values(), v)
	}
	return err
}

// Agents lists the agents the gateway exposes.
func (c *Client) Agents(ctx context.Context) ([]Agent, error) {
	var out struct {
		Agents []Agent `json:"agents"`
	}
	err := c.get(ctx, "/v1/agents", nil, &out)
	return out.Agents, err
}

// Scope names what Events reads: a run, a thread or a task.
type Scope string

// The scopes of Events.
const (
	RunScope    Scope = "runs"
	ThreadScope Scope = "threads"
	TaskScope   Scope = "tasks"
)

// Events returns one page of the events of a run, thread or task after
// seq after (at most limit, 0: the gateway's default), of types with the
// prefix typePrefix. next is the after of the next page, 0 when there is
// no more now.
func (c *Client) Events(ctx context.Context, scope Scope, id string, after uint64, limit int, typePrefix string) (evs []Event, next uint64, err error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatUint(after, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if typePrefix != "" {
		q.Set("type", typePrefix)
	}
	var out struct {
		Events []Event `json:"events"`
		Next   uint64  `json:"next_after"`
	}
	err = c.get(ctx, "/v1/"+string(scope)+"/"+url.PathEscape(id)+"/events", q, &out)
	return out.Events, out.Next, err
}

// AllEvents pages through Events to the end, yielding each event.
func (c *Client) AllEvents(ctx context.Context, scope Scope, id string, after uint64, typePrefix string) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			evs, next, err := c.Events(ctx, scope, id, after, 5000, typePrefix)
			if err != nil {
				yield(Event{}, err)
				return
			}
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
				after = ev.Seq
			}
			if next == 0 || len(evs) == 0 {
				return
			}
			after = max(after, next)
		}
	}
}

// RunTree returns the task tree of a run.
func (c *Client) RunTree(ctx context.Context, runID string) (*Tree, error) {
	var t Tree
	err := c.get(ctx, "/v1/runs/"+url.PathEscape(runID)+"/tree", nil, &t)
	return &t, err
}

// TaskTree returns the subtree rooted at a task.
func (c *Client) TaskTree(ctx context.Context, taskID string) (*Tree, error) {
	var t Tree
	err := c.get(ctx, "/v1/tasks/"+url.PathEscape(taskID)+"/tree", nil, &t)
	return &t, err
}

// StreamQuery selects the events of Stream; set fields combine with AND.
type StreamQuery struct {
	Run, Thread, Task, Agent string
	Type                     string // a type prefix
	After                    uint64 // resume after this seq
}

// Stream follows the live stream (GET /v1/stream): the events after
// q.After, then new ones as they are appended, until ctx is done (the
// sequence then ends without an error). When the gateway closes the stream
// (a slow consumer is cut off, a connection drops) Stream reconnects from
// the last seq it yielded, so no event is missed or repeated; it gives up
// with an error after three reconnects in a row that brought nothing. An
// error answer (401, 403, ...) ends it at once.
func (c *Client) Stream(ctx context.Context, q StreamQuery) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		after := q.After
		idle := 0
		for {
			got, err, stop := c.stream(ctx, q, &after, yield)
			if stop || ctx.Err() != nil {
				return
			}
			var apiErr *Error
			if errors.As(err, &apiErr) {
				yield(Event{}, err)
				return
			}
			if got {
				idle = 0
			} else if idle++; idle > 3 {
				if err == nil {
					err = errStreamClosed
				}
				yield(Event{}, err)
				return
			}
			if idle > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Duration(idle) * 200 * time.Millisecond):
				}
			}
		}
	}
}

var errStreamClosed error = coded.New("client: the gateway keeps closing the stream", protocol.CodeCapacity)

// stream reads one connection; it reports whether it yielded an event,
// the error that ended it and whether the consumer stopped.
func (c *Client) stream(ctx context.Context, q StreamQuery, after *uint64, yield func(Event, error) bool) (got bool, err error, stop bool) {
	v := url.Values{}
	for k, s := range map[string]string{"run": q.Run, "thread": q.Thread, "task": q.Task, "agent": q.Agent, "type": q.Type} {
		if s != "" {
			v.Set(k, s)
		}
	}
	v.Set("after", strconv.FormatUint(*after, 10))
	resp, err := c.request(ctx, "/v1/stream", v)
	if err != nil {
		return false, err, false
	}
	defer resp.Body.Close()
	var bad error
	err = readSSE(resp.Body, func(event string, data []byte) error {
		if strings.HasPrefix(event, "clutch.") {
			if event == "clutch.closed" {
				return errReconnect // from *after
			}
			return nil
		}
		var ev Event
		if err := jsonv2.Unmarshal(data, &ev); err != nil {
			bad = coded.Wrap(errBadAnswer, "stream event", err)
			return bad
		}
		if ev.Seq <= *after {
			return nil
		}
		got, *after = true, ev.Seq
		if !yield(ev, nil) {
			return errStop
		}
		return nil
	})
	switch {
	case err == errStop:
		return got, nil, true
	case bad != nil:
		yield(Event{}, bad)
		return got, bad, true
	case err == errReconnect:
		return got, nil, false
	}
	return got, err, false
}

var (
	errStop      = errors.New("stop")
	errReconnect = errors.New("reconnect")
)

// readSSE reads Server-Sent Events from r and calls frame with the event
// name ("" when none) and the data (data lines joined by "\n") of each
// event that has data; comments and other fields are skipped. It returns
// frame's first error, or the read error (nil at EOF).
func readSSE(r io.Reader, frame func(event string, data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxSSELine)
	var event string
	var data bytes.Buffer
	hasData := false
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if hasData {
				if err := frame(event, data.Bytes()); err != nil {
					return err
				}
			}
			event, hasData = "", false
			data.Reset()
		case line[0] == ':':
			// a comment: the heartbeat
		default:
			name, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(name) {
			case "event":
				event = string(value)
			case "data":
				if hasData {
					data.WriteByte('\n')
				}
				data.Write(value)
				hasData = true
			}
		}
	}
	return sc.Err()
}

// maxSSELine is the longest line of a stream: an event of a message of
// protocol.DefaultMaxBytes, with room.
const maxSSELine = protocol.DefaultMaxBytes + 64<<10

// Health reports whether GET /healthz answers 200.
func (c *Client) Health(ctx context.Context) error {
	resp, err := c.request(ctx, "/healthz", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// StoreUsage is what the gateway's store holds (GET /v1/store, read:all):
// store.Usage, zero times when never (or not known).
type StoreUsage struct {
	Bytes          int64     `json:"bytes"`
	Free           int64     `json:"free_bytes,omitempty"`
	Events         uint64    `json:"events"`
	LastSeq        uint64    `json:"last_seq"`
	OldestSeq      uint64    `json:"oldest_seq,omitempty"`
	OldestTime     time.Time `json:"oldest_time,omitzero"`
	LastCompaction time.Time `json:"last_compaction,omitzero"`
	LastBackup     time.Time `json:"last_backup,omitzero"`
}

// Store returns the usage of the gateway's store. A caller without
// read:all gets an error matching protocol.CodePolicyDenied (403).
func (c *Client) Store(ctx context.Context) (StoreUsage, error) {
	var u StoreUsage
	err := c.get(ctx, "/v1/store", nil, &u)
	return u, err
}
