package mcp

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// httpTransport wraps the RoundTripper of a Streamable HTTP server: it adds
// the configured headers, notes a 429's Retry-After for the call that got
// it, and keeps responses under the size limit by replacing an oversized
// JSON body or SSE event with a JSON-RPC error for the same request
// (frameFilter), so the session survives.
type httpTransport struct {
	base    http.RoundTripper
	headers map[string]string
	limit   int
}

func (t *httpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 || traceparentOf(req.Context()) != "" {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
		setTraceparent(req) // trace.go
	}
	var id []byte
	if req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			var sc idScanner
			b, _ := io.ReadAll(io.LimitReader(body, 1<<20))
			body.Close()
			sc.feed(b)
			id = sc.id()
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		if st, ok := req.Context().Value(callKey{}).(*callState); ok {
			st.setRetryAfter(parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()))
		}
		return resp, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 || resp.Body == nil {
		return resp, nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "text/event-stream":
		resp.Body = newFrameFilter(resp.Body, t.limit, true)
	case "application/json":
		resp.Body = &jsonBodyLimit{body: resp.Body, limit: t.limit, id: id}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	}
	return resp, nil
}

// parseRetryAfter reads a Retry-After header (seconds or an HTTP date) as
// seconds: 0 when absent or unreadable, at least 1 for an HTTP date.
func parseRetryAfter(v string, now time.Time) float64 {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return s
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(1, float64(t.Sub(now).Round(time.Second)/time.Second))
	}
	return 0
}

// jsonBodyLimit reads a JSON response body of at most limit bytes; a
// larger body is replaced by a JSON-RPC error for the request's id.
type jsonBodyLimit struct {
	body  io.ReadCloser
	limit int
	id    []byte
	once  sync.Once
	r     *bytes.Reader
	err   error
}

func (j *jsonBodyLimit) Read(p []byte) (int, error) {
	j.once.Do(func() {
		b, err := io.ReadAll(io.LimitReader(j.body, int64(j.limit)+1))
		if err != nil {
			j.err = err
			return
		}
		if len(b) > j.limit {
			n := len(b)
			m, _ := io.Copy(io.Discard, io.LimitReader(j.body, 1<<30))
			n += int(m)
			b = tooLargeFrame("", j.id, n, j.limit)
		}
		j.r = bytes.NewReader(b)
	})
	if j.err != nil {
		return 0, j.err
	}
	return j.r.Read(p)
}

func (j *jsonBodyLimit) Close() error { return j.body.Close() }
