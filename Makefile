# Better Compute control plane. `make run` serves on embedded defaults; `make test` runs every test.
SHELL := /bin/bash
GOBIN := $(shell go env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)

BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_CONNECT_GO_VERSION := v1.21.1
STATICCHECK_VERSION := v0.8.2
HELM_VERSION := v4.3.2
# go test -p bounds parallel packages: each opens its own database pools (scripts/ensure-postgres.sh
# raises max_connections to 300).
# -vet=off: make test's lint has run go vet ./... (every analyzer, test files included) already;
# go test's own vet uses another analyzer set, so it would analyse every dependency a second time.
# -ldflags=-w: test binaries without DWARF link faster; stack traces do not need it.
GO_TEST_FLAGS ?= -p 2 -count=1 -timeout 30m -vet=off -ldflags=-w

.PHONY: run test test-go test-ts generate openapi check-generated lint tools postgres bench clean

## run: the whole service on embedded defaults (local PostgreSQL, OpenFGA in process, DO simulator)
run: postgres
	go run ./cmd/bc-server dev

## test: every test — generated code fresh, lint, vet, Go tests on real PostgreSQL and OpenFGA, the TS SDK from Node and Chromium
test: postgres check-generated lint test-go test-ts test-web

# The packages with tests: bench/ packages that hold only benchmarks are left out (make bench runs
# them; lint's go vet compiles them), so each does not link a test binary that runs nothing.
TEST_PACKAGES = $$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' ./... | \
	while read -r p d; do case $$p in */bench/*) grep -qs '^func Test' $$d/*_test.go || continue;; esac; echo $$p; done)

test-go:
	go test $(GO_TEST_FLAGS) $(TEST_PACKAGES)
	# sdk/go is a module of its own: ./... above does not reach it (lint vets it).
	cd sdk/go && go test -count=1 ./...

test-ts: sdk/ts/node_modules
	bash sdk/ts/test/run.sh

## generate: regenerate gen/go and sdk/ts/src/gen from proto/, then openapi/compute.json from them
## and docs/api/reference.md from that
generate: tools sdk/ts/node_modules
	./scripts/protodeps.sh
	buf lint
	rm -rf gen/go/bettercompute sdk/ts/src/gen
	buf generate
	go run ./cmd/errcode-gen -o gen/go/bettercompute/compute/v1/errcode/errcode.go
	$(MAKE) openapi

## openapi: regenerate openapi/compute.json (the JSON mapping's OpenAPI description) and the API
## reference rendered from it (docs/api/reference.md)
openapi:
	go run ./cmd/openapi-gen -o openapi/compute.json
	go run ./cmd/apidoc-gen -in openapi/compute.json -o docs/api/reference.md

# GENERATED are the checked-in outputs of make generate.
GENERATED := gen sdk/ts/src/gen openapi docs/api/reference.md

## check-generated: fail when checked-in generated code is stale
check-generated: generate
	@git diff --exit-code --stat -- $(GENERATED) || { echo "generated code is stale: run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- $(GENERATED))" || { git status --porcelain -- $(GENERATED); echo "generated code is stale: run make generate and commit"; exit 1; }

## lint: gofmt (any file it would change fails), go vet and staticcheck on the three modules, and
## buf breaking against the schemas this commit started from. The base is the merge base with main
## on a branch and HEAD~1 on main itself (CI's fresh clone, where main is the only branch):
## scripts/buf-breaking.sh. A few seconds once the build cache is warm.
lint: tools
	@bad=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); if [ -n "$$bad" ]; then echo "gofmt: $$bad"; exit 1; fi
	go vet ./...
	staticcheck ./...
	# gen/go and sdk/go are modules of their own: ./... above does not reach them.
	cd gen/go && go vet ./...
	cd sdk/go && go vet ./... && staticcheck ./...
	./scripts/protodeps.sh
	./scripts/buf-breaking.sh

tools:
	@command -v buf >/dev/null && buf --version | grep -q $(BUF_VERSION:v%=%) || ./scripts/install-buf.sh $(BUF_VERSION) $(GOBIN)
	@command -v protoc-gen-go >/dev/null || go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	@command -v protoc-gen-connect-go >/dev/null || go install connectrpc.com/connect/cmd/protoc-gen-connect-go@$(PROTOC_GEN_CONNECT_GO_VERSION)
	@command -v staticcheck >/dev/null && staticcheck -version | grep -q '($(STATICCHECK_VERSION:v%=%))' || go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## helm: helm on PATH, for working on the chart by hand. The chart tests (deploy/) use the helm
## scripts/kube-apiserver.sh builds with kube-apiserver (one compile of their shared Kubernetes
## packages), and else this one.
.PHONY: helm
helm:
	@command -v helm >/dev/null || go install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)

sdk/ts/node_modules: sdk/ts/package.json sdk/ts/package-lock.json
	cd sdk/ts && npm ci --no-audit --no-fund
	@touch sdk/ts/node_modules

## test-web: the console in headless Chromium against bc-server dev; fails when web/dist is not the sources' build
.PHONY: test-web web
test-web: sdk/ts/node_modules web/node_modules
	bash web/test/run.sh

## web: rebuild the console into web/dist (checked in: bc-server embeds it, go build needs no Node)
web: sdk/ts/node_modules web/node_modules
	cd web && npm run --silent build

web/node_modules: web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	@touch web/node_modules

postgres:
	./scripts/ensure-postgres.sh

## image: the bc-server image (Containerfile, FROM scratch) with podman or buildah; IMAGE=tag to name it
.PHONY: image
image:
	./scripts/image.sh $(IMAGE)

## bench: the benchmarks under bench/ (figures are ratios measured in one run)
bench: postgres
	go test -run '^$$' -bench . -benchtime 300x ./bench/creates
	go test -run '^$$' -bench . -benchtime 1000x ./bench/authz
	go test -run '^$$' -bench . -benchtime 1x ./bench/converge
	go test -run '^$$' -bench . -benchtime 1x ./bench/latency
	go test -run '^$$' -bench . -benchtime 500x ./bench/slowclients

clean:
	rm -rf .build bin
