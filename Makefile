# butler-apiserver: `make run` serves a standalone API on embedded etcd; `make test` checks everything.
GO       ?= go
BIN      := _output/bin
DATA_DIR ?= .butler
PORT     ?= 8443

.PHONY: all build run test verify verify-gofmt vet verify-codegen update-codegen test-unit test-integration test-e2e clean

all: build

build:
	$(GO) build -o $(BIN)/butler-apiserver ./cmd/butler-apiserver

## run: standalone server on embedded etcd in $(DATA_DIR), admin kubeconfig at $(DATA_DIR)/admin.kubeconfig
run: build
	$(BIN)/butler-apiserver --standalone --data-dir $(DATA_DIR) --secure-port $(PORT)

## test: static checks, generated-code check, unit, integration and kubectl end-to-end tests
test: verify test-unit test-integration test-e2e

verify: verify-gofmt vet verify-codegen

verify-gofmt:
	hack/verify-gofmt.sh

vet:
	$(GO) vet ./...

verify-codegen:
	hack/verify-codegen.sh

update-codegen:
	hack/update-codegen.sh

test-unit:
	$(GO) test ./pkg/... ./cmd/...

test-integration:
	$(GO) test -count=1 -timeout 20m ./test/integration/...

test-e2e: build
	test/e2e/standalone.sh $(BIN)/butler-apiserver

clean:
	rm -rf _output
