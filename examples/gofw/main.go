// Command gofw runs one team of agents built three ways — an eino graph,
// a Genkit flow and a plain Go handler — in one binary, on one router,
// with delegation both ways between them, and prints the run as a tree
// from the store's events.
//
// The team: the writer (a Genkit flow) writes a note on a city; when it
// has no facts, its model calls its research tool, which is the team
// (adapters/genkit's Tool), and the researcher takes the subtask. The
// researcher (eino's ReAct tool loop) looks the city up with its archive
// tool, which is the team too (adapters/eino's Tool), and the archive
// takes that subtask. The archive (a handler func) knows the facts; asked
// for a digest, it delegates the writing to the writer with
// Task.Delegate. The models are deterministic fakes written here, one for
// each framework's model interface: no network, no keys.
//
// In examples/gofw (a module of its own, so the frameworks' dependencies
// stay out of Clutch's):
//
//	go run .               # runs the team, prints the run as a tree
//	go run . -db gofw.db   # keeps the run in a bolt file, for clutch serve
//	go run . -serve        # then serves the gateway and its web UI until Ctrl-C
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/firebase/genkit/go/genkit"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/gateway"
	"github.com/clutchprotocol/clutch/gateway/ui"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
)

func main() {
	db := flag.String("db", "", "bolt file to keep the run in, for `clutch serve --db` (default: in memory)")
	serve := flag.Bool("serve", false, "after the run, serve the gateway and its web UI on -listen until interrupted")
	listen := flag.String("listen", "127.0.0.1:8080", "address of the gateway, with -serve")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, os.Stdout, config{db: *db, serve: *serve, listen: *listen}); err != nil {
		log.Fatal(err)
	}
}

type config struct {
	db     string      // bolt file; "" keeps the run in memory
	serve  bool        // serve the gateway on listen until ctx ends
	listen string      // with serve
	st     store.Store // tests: the store to run on, instead of db (left open)
}

// run runs the team's two tasks on one router and prints the run; it
// returns the run's id.
func run(ctx context.Context, w io.Writer, cfg config) (string, error) {
	st := cfg.st
	if st == nil {
		var err error
		if st, err = openStore(cfg.db); err != nil {
			return "", err
		}
		defer st.Close()
	}
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		return "", err
	}
	r, err := router.New(st, reg, &router.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return "", err
	}
	defer r.Close()
	// Genkit's registry of models, flows and tools; its context is the
	// run's.
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := team(ctx, r, genkit.Init(gctx)); err != nil {
		return "", err
	}
	fmt.Fprintln(w, "the team, in one binary on one router:")
	for _, a := range reg.List() {
		fmt.Fprintf(w, "  %-17s %s\n", a.ID(), a.Card().Display.Desc)
	}
	fmt.Fprintln(w)

	runID, err := play(ctx, r)
	if err != nil {
		return "", err
	}
	if err := printRun(ctx, w, st, runID); err != nil {
		return "", err
	}
	if cfg.db != "" {
		abs, err := filepath.Abs(cfg.db)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(w, "\nThe run is kept in %s. To see it in the web UI, from the repository's root:\n", abs)
		fmt.Fprintf(w, "  go run ./cmd/clutch serve --db %s\n", abs)
	}
	if cfg.serve {
		return runID, serve(ctx, w, r, cfg.listen)
	}
	return runID, nil
}

// play asks the team for two things, in one run: a note on Bergen from
// the writer (who has it researched: writer → researcher → archive), and
// a digest of Oslo from the archive (who has the writer write it:
// archive → writer). It waits for both and returns the run's id.
func play(ctx context.Context, r *router.Router) (string, error) {
	asks := []struct {
		capability string
		payload    any
	}{
		{capWrite, Brief{Subject: "Bergen"}},
		{capDigest, "Oslo"},
	}
	var runID, threadID string
	for _, a := range asks {
		req, err := r.NewRequest("agent:user", "", a.payload)
		if err != nil {
			return "", err
		}
		req.Requires = []string{a.capability}
		if runID == "" {
			runID, threadID = req.RunID, req.ThreadID
		}
		req.RunID, req.ThreadID = runID, threadID
		h, err := r.Submit(ctx, req)
		if err != nil {
			return "", err
		}
		out, err := h.Wait(ctx)
		if err != nil {
			return "", fmt.Errorf("the task for %s: %w", a.capability, err)
		}
		if !out.OK() {
			return "", fmt.Errorf("the task for %s ended with %s", a.capability, out.Type)
		}
	}
	return runID, nil
}

// openStore opens the bolt file path, or a memstore when path is "".
func openStore(path string) (store.Store, error) {
	if path == "" {
		return memstore.New(nil)
	}
	st, err := boltstore.Open(path, nil)
	if errors.Is(err, boltstore.ErrLocked) {
		return nil, fmt.Errorf("%w (is clutch serve holding it? stop it, or use another -db)", err)
	}
	return st, err
}

// serve serves the gateway with its web UI and API over r on listen,
// with a key made for this run, until ctx ends.
func serve(ctx context.Context, w io.Writer, r *router.Router, listen string) error {
	key := rand.Text()
	keys, err := auth.APIKeys(map[string]auth.Caller{key: {AgentID: "agent:operator", Scopes: []string{auth.ScopeAdmin}}})
	if err != nil {
		return err
	}
	gw, err := gateway.New(r, &gateway.Options{Auth: keys, UI: ui.Handler(nil), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(w, "\nserving the web UI at http://%s/ until Ctrl-C; sign in with the key %s\n", ln.Addr(), key)
	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-served
	return nil
}
