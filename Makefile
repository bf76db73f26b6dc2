# The everyday commands. `make run` needs only Go; `make test` brings up PostgreSQL and Redis itself.
GO ?= go
BIN ?= bin/seckill

.PHONY: run build check test fuzz services lint migrate bench bench-cluster bench-go chaos soak screenshots notification-shot cluster cluster-stop clean

run: ## run the product: demo mode unless DATABASE_URL and REDIS_URL are set
	$(GO) run .

build: ## build the binary into bin/
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) .

services: ## start (or install) the local PostgreSQL and Redis the tests use
	./scripts/services.sh

check: lint ## the fast loop, a minute or two: gofmt, go vet, the tests with -short and no race (long ones skip; make test runs them)
	$(GO) test -short -count=1 -timeout 10m ./...

test: services ## every test, with the race detector, against the real services
	$(GO) test -race -count=1 -timeout 30m ./...
	# again without group commit, on databases upgraded from the schema of before versioned migrations
	# (the browser tests' pages are the same either way: they run once, above)
	TEST_SCHEMA=upgraded GROUP_COMMIT=off $(GO) test -race -count=1 -timeout 20m -run 'Buy|Take|Batch|Crowd|Shard|Rush|Queue|Order|Pair|AfterTheWin' -skip 'InABrowser' ./stock ./jobs ./orders ./app
	FUZZTIME=3s ./scripts/fuzz.sh
	# one round of every fault but the lossy redis-lose-second (about 3 minutes; the two Redis failovers add 1)
	$(GO) run ./cmd/chaos -short -faults instance-kill,redis-kill,postgres-stop,postgres-cut,redis-cut,both-kill,conn-flood,redis-failover,redis-partition

fuzz: services ## every fuzz target for FUZZTIME each, default 60s
	FUZZTIME=$${FUZZTIME:-60s} ./scripts/fuzz.sh

bench: ## the load tool's scenarios on a real server: CPU a request against baselines in processes of their own, req/s, audits; the scalper on servers of its own (SCALPER_PEOPLE, SCALPER_ACCOUNTS, SCALPER_UNITS, SCALPER_SEEDS); writes docs/performance.md (SCALE=0.1 for a quick run)
	./scripts/bench.sh

bench-cluster: ## through nginx on a Redis Cluster: the scenarios with two instances and one, the crowds (SHOPPERS), 100,000 connections held (CONNS_HELD)
	./scripts/bench-cluster.sh

bench-go: services ## Go benchmarks: the buy path against its baselines, the consumer's drain rate, captcha drawing (medians of 5)
	$(GO) test -run '^$$' -bench 'Baseline|Buy|Page|Catalog|QueueStatus|LineDocument|InProcess' -benchtime 30000x -count 5 ./app
	$(GO) test -run '^$$' -bench ConsumerDrain -benchtime 20000x -count 5 ./jobs
	$(GO) test -run '^$$' -bench Draw -cpu 1 -count 5 ./captcha

CHAOS_FAULTS ?= instance-kill,redis-kill,postgres-stop,postgres-cut,redis-cut,both-kill,conn-flood,redis-failover,redis-partition,redis-lose-second
chaos: services ## faults mid-sale on servers of its own (ROUNDS, SEED, SCALE, CHAOS_FAULTS): every audit must pass; writes docs/chaos.md
	$(GO) run ./cmd/chaos -rounds $${ROUNDS:-3} -scale $${SCALE:-0.02} $${SEED:+-seed $$SEED} -faults $(CHAOS_FAULTS) -report docs/chaos.md

soak: services ## steady mixed load for SOAK (default 1h; SOAK=20m) on servers of its own: fails if memory, goroutines, descriptors, keys or connections keep growing; writes docs/soak.md, .csv, .svg
	$(GO) run ./cmd/chaos -soak $${SOAK:-1h} -soak-out docs/soak

screenshots: services ## the pages at 375 and 1280 px in English and Chinese, and the consoles, into docs/screenshots
	SCREENSHOTS_DIR=$(CURDIR)/docs/screenshots $(GO) test -count=1 -run 'TestShopperBuysInABrowser|TestMerchantAndAdminInABrowser|TestPauseInABrowser|TestFormErrorsAtOnceInABrowser|TestBlockInABrowser|TestFairnessFiguresLiveInABrowser|TestAppealInABrowser|TestClustersPageInABrowser|TestTurnAnnouncedToABackgroundPage|TestAccountPageEndsAnotherDevice|TestMerchantStopsItsSaleInABrowser|TestMerchantListInABrowser|TestChoosingWeChatPayOrAlipayInABrowser' ./app

notification-shot: services ## the turn's notification as a desktop shows it (Xvfb, D-Bus, dunst, a Chromium with a window), into docs/screenshots; not in CI
	./scripts/notification-shot.sh $(CURDIR)/docs/screenshots

cluster: ## two web instances and a worker on a Redis Cluster of three masters with a replica each behind nginx, on 127.0.0.1:8090 (scripts/cluster.sh)
	./scripts/cluster.sh start

cluster-stop: ## stop what make cluster started
	./scripts/cluster.sh stop

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

migrate: ## run the versioned migrations not yet run on the configured database (go run . migrate status|down)
	$(GO) run . migrate

clean:
	rm -rf bin data
