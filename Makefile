# Clutch: the two commands of README.md are `go run ./examples/quickstart` and `make test`.
GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 10s
BENCHTIME ?= 1s

.PHONY: test check deps deps-system fmt-check vet race test-min-go test-external test-nested bench bench-peers fuzz

# The oldest Go release the module supports: go.mod's go line.
MIN_GO := $(shell sed -n 's/^go //p' go.mod)

# The nested modules: the in-process bridges to Go agent frameworks and the
# examples that use them, each with its own go.mod so that their dependency
# trees never reach the core module (bench/peers and store/storetest/external
# have targets of their own).
NESTED := $(shell git ls-files 'adapters/*/go.mod' 'examples/*/go.mod' 2>/dev/null | xargs -r -n1 dirname)

## test: install what the tests need, then gofmt check, go vet, go test -race,
## go vet with the oldest Go release go.mod allows, the store written outside the module,
## and every nested module's vet and race tests.
test: deps fmt-check vet race test-min-go test-external test-nested

## check: the inner loop, well under 90 s on 2 cores: gofmt, go vet, and the
## tests of the core packages without -race (no peers, no browser, no npm).
## `make test` stays the full run.
CORE ?= $(shell $(GO) list . ./protocol/... ./store/... ./registry/... ./schema/... ./router/... ./internal/... | grep -v -e /pgstore -e /pgpeer)
check: fmt-check
	$(GO) vet $(CORE)
	$(GO) test -count=1 $(CORE)

## deps: download modules, install the system peers the tests run (PostgreSQL
## for store/pgstore, Chromium for the web UI; apt-get, as root, only when one
## is missing) and the npm test peers (every committed package-lock.json,
## installed with `npm ci` into its own git-ignored node_modules).
deps: deps-system
	$(GO) mod download
	@for d in $(NESTED); do (cd "$$d" && $(GO) mod download) || exit 1; done
	@for lock in $$(git ls-files '*package-lock.json' 2>/dev/null); do \
		dir=$$(dirname "$$lock"); echo "npm ci in $$dir"; \
		(cd "$$dir" && npm ci --no-audit --no-fund --loglevel=error) || exit 1; \
	done

## deps-system: PostgreSQL (initdb under /usr/lib/postgresql/*/bin), Chromium,
## and zsh and fish (for the CLI's completion scripts) from Debian. A no-op when both are installed; without root it says what to run.
deps-system:
	@missing=""; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v zsh >/dev/null 2>&1 || missing="$$missing zsh"; \
	command -v fish >/dev/null 2>&1 || missing="$$missing fish"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then echo "make deps: missing$$missing; run as root: apt-get install -y$$missing"; exit 0; fi; \
	echo "apt-get install -y$$missing"; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

race:
	$(GO) test -race -count=1 $(PKGS)

## test-min-go: with the toolchain of go.mod's go line (fetched through the
## module proxy), go vet type-checks every package and its tests, so the go
## line stays true (everything compiles with that release). The tests run
## once, in the race pass: a second run with a release that differs only by
## patches rebuilds and reruns them (minutes on 2 cores) and checks little
## the first run did not.
test-min-go:
	GOTOOLCHAIN=go$(MIN_GO) $(GO) vet $(PKGS)

## test-external: a store built in a module of its own with only the exported
## store/driver passes storetest (store/storetest/external; `go test ./...`
## at the root does not descend into it).
test-external:
	cd store/storetest/external && $(GO) vet ./... && $(GO) test -race -count=1 ./...

## test-nested: go vet and go test -race in each nested module (NESTED).
test-nested:
	@for d in $(NESTED); do \
		echo "== $$d"; \
		(cd "$$d" && $(GO) vet ./... && $(GO) test -race -count=1 ./...) || exit 1; \
	done

## bench: every benchmark, with allocations.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)

## bench-peers: Clutch against Watermill and NATS JetStream on identical work
## (bench/peers, its own module: `make test` and `make bench` do not run it).
## Prints each benchmark and the ratios; a few minutes.
bench-peers:
	cd bench/peers && $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) .

## fuzz: a short run ($(FUZZTIME)) of every fuzz target in the module.
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done
