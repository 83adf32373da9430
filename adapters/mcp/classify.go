package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"regexp"
	"strings"
	"syscall"

	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// outcome is a classified failure: the code of the tool.error and what
// goes with it.
type outcome struct {
	code      protocol.Code
	message   string
	retryable bool
	details   map[string]any
	broken    bool // the connection is unusable: drop the session
}

func (o *outcome) detail(k string, v any) {
	if o.details == nil {
		o.details = map[string]any{}
	}
	o.details[k] = v
}

// notFoundRE recognises "no such tool" in the words of the SDKs we know:
// go-sdk `unknown tool "x"`, TypeScript SDK `Tool x not found`.
var notFoundRE = regexp.MustCompile(`(?i)(unknown tool|no such tool|tool\b.{0,200}\bnot found)`)

var rateLimitRE = regexp.MustCompile(`(?i)(rate.?limit|too many requests|quota exceeded|throttl)`)

// classifyError maps an error of a call (or of connecting, or of listing
// tools) to a code. retryAfter is the Retry-After the HTTP transport saw
// for this call, in seconds.
func classifyError(err error, tool string, retryAfter float64) outcome {
	var ua *unavailable
	var denied *egress.DeniedError
	switch {
	case errors.As(err, &denied):
		// The egress policy refused a dial or a redirect (docs/protocol.md §6).
		o := outcome{code: protocol.CodePolicyDenied, message: denied.Error()}
		o.detail("host", denied.Host)
		if denied.Address != "" {
			o.detail("address", denied.Address)
		}
		o.detail("rule", denied.Rule)
		return o
	case errors.As(err, &ua):
		o := outcome{code: protocol.CodeToolUnavailable, message: ua.Error(), retryable: true}
		if ua.retryAfter > 0 {
			o.detail("retryAfter", roundSeconds(ua.retryAfter.Seconds()))
		}
		return o
	case errors.Is(err, context.DeadlineExceeded):
		return outcome{code: protocol.CodeTimeout, message: "the call's deadline passed", retryable: true}
	case errors.Is(err, context.Canceled):
		return outcome{code: protocol.CodeCancelled, message: "the call was cancelled"}
	}
	msg := err.Error()
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		o := classifyWireError(we, tool)
		if o.code == protocol.CodeToolFailed && retryAfter > 0 {
			o.code, o.retryable = protocol.CodeRateLimited, true
			o.detail("retryAfter", roundSeconds(retryAfter))
		}
		return o
	}
	switch {
	case retryAfter > 0 || strings.Contains(msg, "Too Many Requests"):
		o := outcome{code: protocol.CodeRateLimited, message: "the server is rate limiting: " + msg, retryable: true}
		if retryAfter > 0 {
			o.detail("retryAfter", roundSeconds(retryAfter))
		}
		return o
	case strings.Contains(msg, "exceeded the configured maximum"), strings.Contains(msg, "event exceeded"):
		// The SDK's own frame cap tripped (our filter keeps frames under
		// it, so only a misbehaving transport gets here).
		return outcome{code: protocol.CodeTooLarge, message: "the result exceeds the size limit: " + msg, broken: true}
	}
	o := outcome{code: protocol.CodeToolUnavailable, message: "MCP server error: " + msg, retryable: true}
	if isConnectionError(err) {
		o.message = "the connection to the MCP server failed: " + msg
		o.broken = true
	}
	return o
}

// isConnectionError reports whether err means the connection is gone.
func isConnectionError(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) || errors.As(err, &ne) ||
		strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "file already closed")
}

// classifyWireError maps a JSON-RPC error response.
func classifyWireError(we *jsonrpc.Error, tool string) outcome {
	var data map[string]any
	if len(we.Data) > 0 {
		_ = json.Unmarshal(we.Data, &data)
	}
	o := outcome{message: we.Message}
	o.detail("jsonrpc_code", we.Code)
	if data != nil {
		o.detail("jsonrpc_data", data)
	}
	switch {
	case we.Code == codeTooLarge && data[tooLargeMarker] == true:
		o.code = protocol.CodeTooLarge
		o.details = map[string]any{"bytes": data["bytes"], "limit": data["limit"]}
	case (we.Code == jsonrpc.CodeInvalidParams || we.Code == jsonrpc.CodeMethodNotFound) && notFoundRE.MatchString(we.Message):
		o.code = protocol.CodeToolNotFound
	case numberOf(data, "retryAfter") > 0 || rateLimitRE.MatchString(we.Message):
		o.code, o.retryable = protocol.CodeRateLimited, true
		if ra := numberOf(data, "retryAfter"); ra > 0 {
			o.detail("retryAfter", ra)
		}
	default:
		o.code = protocol.CodeToolFailed
	}
	return o
}

// classifyResult maps a result with isError set (the tool ran and failed,
// or the server reported "unknown tool" that way, as TypeScript SDK v1
// servers do). A docs/protocol.md §15 style structured error — {error, code,
// retryable, retryAction} in structuredContent or as the JSON text of the
// first content block — keeps its retryability and retryAction; one that
// names a rate limit or carries retryAfter becomes RATE_LIMITED.
func classifyResult(res *sdk.CallToolResult) outcome {
	text := firstText(res)
	o := outcome{code: protocol.CodeToolFailed, message: text}
	if o.message == "" {
		o.message = "the tool reported an error"
	}
	env := structuredError(res.StructuredContent)
	if env == nil && strings.HasPrefix(strings.TrimSpace(text), "{") {
		var m map[string]any
		if json.Unmarshal([]byte(text), &m) == nil {
			env = structuredError(m)
		}
	}
	if env != nil {
		if e, ok := env["error"].(string); ok && e != "" {
			o.message = e
		} else if e, ok := env["message"].(string); ok && e != "" {
			o.message = e
		}
		if r, ok := env["retryable"].(bool); ok {
			o.retryable = r
		}
		for _, k := range []string{"retryAction", "code"} {
			if v, ok := env[k]; ok {
				o.detail(map[string]string{"retryAction": "retryAction", "code": "server_code"}[k], v)
			}
		}
		code, _ := env["code"].(string)
		if ra := numberOf(env, "retryAfter"); ra > 0 || rateLimitRE.MatchString(code) {
			o.code, o.retryable = protocol.CodeRateLimited, true
			if ra > 0 {
				o.detail("retryAfter", ra)
			}
		}
		return o
	}
	if notFoundRE.MatchString(text) {
		o.code = protocol.CodeToolNotFound
	}
	return o
}

// structuredError returns v as a docs/protocol.md §15 error envelope, nil when it is
// not one.
func structuredError(v any) map[string]any {
	var m map[string]any
	switch x := v.(type) {
	case map[string]any:
		m = x
	case json.RawMessage:
		if json.Unmarshal(x, &m) != nil {
			return nil
		}
	default:
		return nil
	}
	_, hasErr := m["error"].(string)
	_, hasCode := m["code"].(string)
	_, hasRetry := m["retryable"].(bool)
	if (hasErr || hasCode) && (hasRetry || hasCode || m["retryAction"] != nil || m["retryAfter"] != nil) {
		return m
	}
	return nil
}

func numberOf(m map[string]any, k string) float64 {
	switch x := m[k].(type) {
	case float64:
		return x
	case json.Number:
		f, _ := x.Float64()
		return f
	}
	return 0
}

func roundSeconds(s float64) float64 {
	return float64(int64(s*1000+0.5)) / 1000
}

// firstText returns the text of the first text block, or "".
func firstText(res *sdk.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			return t.Text
		}
	}
	return ""
}
