package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// server is a `langgraphjs dev` process.
type server struct {
	url  string
	cmd  *exec.Cmd
	dir  string
	pipe *io.PipeWriter
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// startServer starts the Agent Server of dir (its langgraph.json and
// graphs, its node_modules) in a scratch directory, so that its state
// starts empty, on a free 127.0.0.1 port, and waits until it serves.
func startServer(ctx context.Context, dir string) (*server, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("this example needs node (https://nodejs.org) on PATH")
	}
	abs, _ := filepath.Abs(dir)
	cli := filepath.Join(abs, "node_modules", "@langchain", "langgraph-cli", "dist", "cli", "cli.mjs")
	if _, err := os.Stat(cli); err != nil {
		return nil, fmt.Errorf("the LangGraph Agent Server is not installed in %s: run `make deps` from the repository root, or pass -url", dir)
	}
	scratch, err := os.MkdirTemp("", "clutch-langgraph-example-")
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"graphs.mjs", "langgraph.json", "package.json"} {
		b, err := os.ReadFile(filepath.Join(abs, f))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(scratch, f), b, 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.Symlink(filepath.Join(abs, "node_modules"), filepath.Join(scratch, "node_modules")); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(node, cli, "dev", "--port", strconv.Itoa(port), "--host", "127.0.0.1", "--no-browser")
	cmd.Dir = scratch
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "LANGSMITH_TRACING=false")
	ownGroup(cmd)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{url: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, dir: scratch, pipe: pw}
	ready := make(chan struct{})
	var tail []string
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		closed := false
		for sc.Scan() {
			line := ansi.ReplaceAllString(sc.Text(), "")
			if !closed {
				tail = append(tail, line)
				if strings.Contains(line, "Server running at") {
					closed = true
					close(ready)
				}
			}
		}
	}()
	select {
	case <-ready:
		return s, nil
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	case <-time.After(120 * time.Second):
		s.stop()
		return nil, fmt.Errorf("langgraphjs dev did not start within 120 s:\n%s", strings.Join(tail, "\n"))
	}
}

// stop ends the server and the processes it started.
func (s *server) stop() {
	stopGroup(s.cmd)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
	s.pipe.Close()
	os.RemoveAll(s.dir)
}
