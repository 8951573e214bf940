# askctl — every target wraps one step; `make help` lists them.
GO        ?= go
NPM_DIR   := testdata/sdk
NPM_STAMP := $(NPM_DIR)/node_modules/.installed
STATICCHECK_VERSION := v0.8.2

# The end-to-end tier: tests that drive the real claude CLI (node, ≈1 s of CPU a
# session) or Chromium. make test runs every other test; make e2e runs these;
# CI runs both. A test that reaches the real CLI or a browser under make test
# fails and says to list it here (internal/testenv, ASKCTL_TIER=fast).
# Both run with -count=1: the suites build askctl from source in a
# subprocess, which go test's cache does not see, so a cached pass could
# be stale after a change to the bridge.
E2E := TestServeRealCLI|TestRestartDropsTheSpareTab|TestMCPRealCLI|TestPage|TestPageLogout|TestPageTimeout|TestRecordRealCLI|TestRecordPrintModeMCP|TestEditedRecordingIsReported|TestRecordResumedSession|TestFidelity|TestFidelityCatchesDrift|TestReplayUserMessagesAndDefaultModel|TestReferenceBridgeBrowser|TestReferenceBridgeRealAgent|TestBrokenBridgesRealAgent|TestBrokenPages|TestLearnRestoresARelease

.PHONY: help build conformance explore explore-browser replay demo test e2e race npm real-cli browser screenshots lint bench mutate fuzz fidelity fidelity-releases conformance-oldest sdk-releases clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*?## "} /^[a-zA-Z0-9_-]+:.*?## / {n++; name[n] = $$1; text[n] = $$2; if (length($$1) > w) w = length($$1)} END {for (i = 1; i <= n; i++) printf "  %-*s  %s\n", w, name[i], text[i]}' $(MAKEFILE_LIST)

build: ## build bin/askctl and bin/fakeclaude
	$(GO) build -o bin/ ./cmd/...

conformance: build ## the main job: check the reference bridge against every requirement, then explore it for 20s (askctl conformance --explore)
	./bin/askctl conformance --explore 20s --found bin/explored.txtar

explore: build ## explore the reference bridge over ws, http, control-ws and exec (a minute each), and prove the explorer finds every broken bridge (CI runs it; about 20 min: the broken bridges three at a time, each find shrunk for up to 15 s)
	./bin/askctl conformance --bridge reference-ws --run '^$$' --explore 1m --seed 1000 --found bin/explored-ws.txtar
	./bin/askctl conformance --bridge reference-http --run '^$$' --explore 1m --seed 1000 --found bin/explored-http.txtar
	./bin/askctl conformance --bridge reference-control-ws --run '^$$' --explore 1m --seed 1000 --found bin/explored-control-ws.txtar
	./bin/askctl conformance --bridge profile/builtin/reference-exec.json --run '^$$' --explore 1m --seed 1000 --found bin/explored-exec.txtar
	ASKCTL_EXPLORE_DEFECTS=1 $(GO) test -count=1 -timeout 90m -parallel 3 -run '^TestExploreFindsDefects$$' -v ./conformance

explore-browser: build browser ## explore the reference bridge through its page in Chromium for a minute (not in CI: it still finds the browser adapter's own races; see conformance/README.md)
	./bin/askctl conformance --bridge reference-browser --run '^$$' --explore 1m --seed 1000 --found bin/explored-browser.txtar

replay: build ## replay every built-in scenario against fakeclaude
	./bin/askctl replay

demo: build ## start the reference bridge with fakeclaude, run a session, answer it with askctl, show what the agent got
	@./scripts/demo.sh

test: npm ## install the pinned npm packages, vet, and run every test but the end-to-end tier (about 5 min; CI runs this and make e2e)
	$(GO) vet ./...
	$(GO) vet -tags mutation ./bridge ./internal/mcpask ./internal/mutation
	ASKCTL_TIER=fast ASKCTL_REQUIRE_NPM=1 $(GO) test -count=1 -timeout 30m -parallel 8 -skip '^($(E2E))$$' ./...

e2e: npm real-cli browser ## the end-to-end tier: the tests with the real claude CLI (fakeclaude's fidelity among them) and with Chromium (CI runs it)
	ASKCTL_REQUIRE_NPM=1 ASKCTL_REQUIRE_BROWSER=1 $(GO) test -count=1 -timeout 40m -run '^($(E2E))$$' ./...

# The race detector makes the tests' own code (the harness) several times
# slower on the CPU, so the suite's waits are doubled (ASKCTL_SLOW=2): this
# pass looks for data races; the tiers above check the deadlines. It runs
# make test's tests with -short: the suite against the reference bridge over
# every surface kind but the browser, once, not again against each of the
# broken bridges (the same code of the harness, run a hundred times over, for
# over twenty minutes under the detector). The end-to-end tier is not raced:
# the browser adapter (chromedp) and the real CLI's runs are checked for
# their deadlines, not for data races.
race: npm ## run make test's tests with the race detector, -short (the suite's waits doubled)
	ASKCTL_SLOW=2 ASKCTL_TIER=fast ASKCTL_REQUIRE_NPM=1 $(GO) test -race -short -count=1 -timeout 40m -skip '^($(E2E))$$' ./...

npm: $(NPM_STAMP) ## install the pinned TypeScript Agent SDK the tests drive fakeclaude with

real-cli: build ## install the pinned real claude CLI (the newest learned release) and the base release the captures are of into your cache, once (askctl claude install)
	./bin/askctl claude install
	./bin/askctl claude install base

browser: ## install Debian's chromium for the page's browser tests, where none is found
	@./scripts/install-chromium.sh

screenshots: browser ## take the README's pictures of the page (docs/), in the browser tests
	mkdir -p docs
	ASKCTL_SCREENSHOTS=$(CURDIR)/docs ASKCTL_REQUIRE_BROWSER=1 $(GO) test -count=1 -run 'TestPage' ./bridge

fidelity: real-cli ## play every built-in with fakeclaude and the real CLI, and diff them
	./bin/askctl fidelity

fidelity-releases: build ## fidelity on the newest and the oldest learned release (each installed into your cache once; CI runs it)
	./bin/askctl fidelity --cli latest
	./bin/askctl fidelity --cli oldest

conformance-oldest: build ## the suite against the reference bridge with fakeclaude playing the oldest learned release, whose behaviours differ (before 2.1.328 a closed stdin does not withdraw a pending request: the bridge must; CI runs it)
	./bin/askctl conformance --cli oldest

sdk-releases: build ## the TypeScript SDK tests with the SDK release published with the newest and with the oldest learned claude release (CI runs it; needs jq)
	./scripts/sdk-releases.sh

$(NPM_STAMP): $(NPM_DIR)/package.json $(NPM_DIR)/package-lock.json
	cd $(NPM_DIR) && npm ci --no-audit --no-fund --omit=optional --ignore-scripts
	touch $@

lint: ## gofmt, go vet, staticcheck, go mod tidy check
	@test -z "$$(gofmt -l .)" || (echo "gofmt would change:"; gofmt -l .; exit 1)
	$(GO) vet ./...
	$(GO) vet -tags mutation ./bridge ./internal/mcpask ./internal/mutation
	GOOS=darwin $(GO) build ./... # macOS too: a file named for Linux needs its build tag
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	$(GO) mod tidy -diff

bench: ## run the benchmarks (whole sessions; see the README for figures)
	$(GO) test -run '^$$' -bench . -benchmem ./...

mutate: ## mutation-test the reference bridge and the MCP ask server, the conformance suite as the oracle (over an hour on 2 cores with ASKCTL_MUTATE_EXPLORE=20s; not in CI; see conformance/MUTATION.md)
	./scripts/mutate.sh

fuzz: ## fuzz the line decoder for 30s
	$(GO) test -run '^$$' -fuzz FuzzDecoder -fuzztime 30s ./protocol

clean: ## remove build output and installed npm packages
	rm -rf bin $(NPM_DIR)/node_modules
