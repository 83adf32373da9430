package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// safeEnv are the variables a stdio server inherits unless
// ServerConfig.InheritEnv is set (the TypeScript SDK's choice, plus the
// locale).
var safeEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "USER", "LANG", "LC_ALL"}

// stdioTransport starts a fresh server process per connection. Unlike
// sdk.CommandTransport it captures stderr into the logger, puts the server
// in its own process group (so Close also ends the processes it spawned,
// e.g. npx → node), and filters oversized frames (frameFilter).
type stdioTransport struct {
	cfg       *ServerConfig
	log       *slog.Logger
	stderr    *stderrLog
	limit     int
	terminate time.Duration
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	cmd := exec.Command(t.cfg.Command, t.cfg.Args...)
	cmd.Dir = t.cfg.Dir
	cmd.Env = commandEnv(t.cfg)
	cmd.Stderr = t.stderr
	cmd.WaitDelay = t.terminate // bounds Wait when a grandchild holds stderr open
	setProcessGroup(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", t.cfg.Command, err)
	}
	t.log.Debug("mcp: started stdio server", "mcp_server", t.cfg.Name, "pid", cmd.Process.Pid)
	p := &process{cmd: cmd, stdin: stdin, terminate: t.terminate, exited: make(chan struct{})}
	t.stderr.started(p.exited)
	go p.wait()
	// The frame filter keeps each line under the limit, so the SDK's own
	// line cap only has to allow for the filter's margin.
	io := &sdk.IOTransport{
		Reader:        nopCloser{newFrameFilter(stdout, t.limit, false)},
		Writer:        p,
		MaxLineLength: t.limit + 64<<10,
	}
	return io.Connect(ctx)
}

// commandEnv returns the environment of a stdio server.
func commandEnv(cfg *ServerConfig) []string {
	var env []string
	if cfg.InheritEnv {
		env = os.Environ()
	} else {
		for _, k := range safeEnv {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
	}
	keys := make([]string, 0, len(cfg.Env))
	for k := range cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+cfg.Env[k])
	}
	return env
}

type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil }

// process is a running stdio server. Closing it is the shutdown sequence
// of the MCP stdio transport: close stdin, wait, SIGTERM, wait, SIGKILL
// (the whole process group each time).
type process struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	terminate time.Duration
	exited    chan struct{}
	waitErr   error
	once      sync.Once
	closeErr  error
}

func (p *process) wait() {
	p.waitErr = p.cmd.Wait()
	close(p.exited)
}

func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

func (p *process) Close() error {
	p.once.Do(func() { p.closeErr = p.shutdown() })
	return p.closeErr
}

func (p *process) shutdown() error {
	_ = p.stdin.Close()
	waitFor := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-p.exited:
			return true
		case <-t.C:
			return false
		}
	}
	if !waitFor(p.terminate) {
		signalGroup(p.cmd, false)
		if !waitFor(p.terminate) {
			signalGroup(p.cmd, true)
			<-p.exited
		}
	}
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		return nil // a server that exits non-zero on shutdown is not our failure
	}
	if errors.Is(p.waitErr, exec.ErrWaitDelay) {
		return nil
	}
	return p.waitErr
}

// stderrLog logs each line a server writes to stderr and keeps the last
// few for error details.
type stderrLog struct {
	log    *slog.Logger
	server string

	mu     sync.Mutex
	part   []byte        // an unfinished line
	tail   []string      // the last lines, oldest first
	exited chan struct{} // closed when the latest process has exited and its stderr is read
}

const (
	maxStderrLine  = 4 << 10
	stderrTailSize = 10
)

func (s *stderrLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.part = append(s.part, p...)
			if len(s.part) > maxStderrLine {
				s.emit(s.part)
				s.part = s.part[:0]
			}
			break
		}
		line := p[:i]
		if len(s.part) > 0 {
			line = append(s.part, line...)
		}
		s.emit(line)
		s.part = s.part[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (s *stderrLog) emit(line []byte) {
	l := strings.TrimRight(string(line[:min(len(line), maxStderrLine)]), "\r")
	if l == "" {
		return
	}
	s.log.Info("mcp: server stderr", "mcp_server", s.server, "stderr", l)
	if len(s.tail) == stderrTailSize {
		copy(s.tail, s.tail[1:])
		s.tail = s.tail[:stderrTailSize-1]
	}
	s.tail = append(s.tail, l)
}

// started records the exit channel of the process now writing.
func (s *stderrLog) started(exited chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exited = exited
}

// TailAfterExit returns Tail once the latest process has exited (its
// stderr is then read to the end, exec.Cmd.Wait sees to that), or after d
// if it has not: a crashing server's last words arrive on stderr after its
// stdout has closed.
func (s *stderrLog) TailAfterExit(d time.Duration) []string {
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	if exited != nil {
		t := time.NewTimer(d)
		select {
		case <-exited:
		case <-t.C:
		}
		t.Stop()
	}
	return s.Tail()
}

// Tail returns the last lines written, oldest first.
func (s *stderrLog) Tail() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tail...)
}
