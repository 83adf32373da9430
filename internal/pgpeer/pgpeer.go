package pgpeer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// User is the database role the clusters are created with (trust
// authentication on the unix socket).
const User = "clutch"

// port names the socket file (.s.PGSQL.<port>); nothing listens on TCP.
const port = 5432

// ErrMissing reports that the PostgreSQL server binaries are not installed.
var ErrMissing = errors.New("pgpeer: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb, no initdb on PATH); run `make deps` (apt-get install postgresql)")

// Cluster is a running throwaway cluster.
type Cluster struct {
	dir   string // the temporary folder: data/, the socket, log
	bin   string
	asPG  bool // the binaries run as the postgres user
	once  sync.Once
	stopE error
}

// Bin returns the folder of the PostgreSQL server binaries, newest version
// first, or ErrMissing.
func Bin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", ErrMissing
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Options configures Start. Nil means defaults.
type Options struct {
	// Settings are extra server settings ("name = value"), added to the
	// cluster's postgresql.conf.
	Settings []string
}

// Start creates and starts a cluster in a new temporary folder. Stop it
// with Stop. The server keeps fsync and synchronous_commit on: what the
// tests measure is a durable store.
func Start(ctx context.Context, opts *Options) (*Cluster, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "clutch-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin, asPG: os.Geteuid() == 0}
	if c.asPG {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgpeer: running as root needs the postgres user of the Debian package: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := c.run(ctx, "initdb", "-D", c.data(), "-A", "trust", "-U", User, "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// Settings go to postgresql.conf, so that a restart keeps them.
	conf := fmt.Sprintf("\nport = %d\nunix_socket_directories = '%s'\nlisten_addresses = ''\nmax_connections = 300\nfsync = on\nsynchronous_commit = on\n", port, dir)
	if opts != nil {
		for _, s := range opts.Settings {
			conf += s + "\n"
		}
	}
	f, err := os.OpenFile(filepath.Join(c.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.StartServer(ctx); err != nil {
		logb, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w\nserver log:\n%s", err, logb)
	}
	return c, nil
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

// run runs a server binary, as the postgres user when the process is root.
func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.asPG {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	detach(cmd)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgpeer: %s: %w\n%s", name, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// DSN returns the connection string of database db ("" for the
// "postgres" database every cluster has).
func (c *Cluster) DSN(db string) string {
	if db == "" {
		db = "postgres"
	}
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", c.dir, port, User, db)
}

// Dir returns the cluster's folder.
func (c *Cluster) Dir() string { return c.dir }

// Tool returns the path of a client program of the cluster's PostgreSQL
// (pg_dump, pg_restore, psql): the one beside the server binaries, so of
// the server's major version. When it is not installed it fails t under
// CI=true and skips it otherwise (see Missing).
func (c *Cluster) Tool(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(c.bin, name)
	if _, err := os.Stat(path); err != nil {
		Missing(t, fmt.Sprintf("pgpeer: %s is not installed beside the server binaries (%s); run `make deps` (apt-get install postgresql, which brings the client programs of its version)", name, path))
	}
	return path
}

// Restart stops the server (fast mode: connections are cut) and starts it
// again on the same data and socket.
func (c *Cluster) Restart(ctx context.Context) error {
	if err := c.StopServer(ctx); err != nil {
		return err
	}
	return c.StartServer(ctx)
}

// StopServer stops the server without removing anything (Restart or
// StartServer bring it back).
func (c *Cluster) StopServer(ctx context.Context) error {
	return c.run(ctx, "pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop")
}

// StartServer starts a server stopped by StopServer.
func (c *Cluster) StartServer(ctx context.Context) error {
	return c.run(ctx, "pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60", "start")
}

// Stop stops the server and removes the folder. Calling it again returns
// the first call's result.
func (c *Cluster) Stop() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c.stopE = c.run(ctx, "pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop")
		if err := os.RemoveAll(c.dir); err != nil && c.stopE == nil {
			c.stopE = err
		}
	})
	return c.stopE
}

// Missing fails the test under CI=true and skips it otherwise, with msg.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Shared is a cluster started once for a test binary (see Main).
type Shared struct {
	c   *Cluster
	err error
}

// Main runs a test binary's tests with one shared cluster, started before
// m.Run and stopped after: call it from TestMain and take the cluster in
// each test with sh.Need(t). A cluster that fails to start is reported by
// Need (fail under CI=true, skip otherwise), not here, so that tests that
// do not need it still run.
func Main(m *testing.M, sh *Shared) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	sh.c, sh.err = Start(ctx, nil)
	cancel()
	code := m.Run()
	if sh.c != nil {
		if err := sh.c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgpeer: stopping the test cluster:", err)
		}
	}
	return code
}

// Need returns the shared cluster, or fails or skips t (see Missing).
func (sh *Shared) Need(t testing.TB) *Cluster {
	t.Helper()
	if sh.c == nil {
		err := sh.err
		if err == nil {
			err = errors.New("pgpeer: the shared cluster was not started (TestMain must call pgpeer.Main)")
		}
		Missing(t, err.Error())
	}
	return sh.c
}

// StartT starts a cluster of its own for t, stopped by t.Cleanup, or fails
// or skips t when PostgreSQL is missing.
func StartT(t testing.TB) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), nil)
	if err != nil {
		if errors.Is(err, ErrMissing) {
			Missing(t, err.Error())
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("pgpeer: %v", err)
		}
	})
	return c
}
