# Airlock — the two commands a fresh machine needs are `make run` and `make test`.
GO       ?= go
BIN      := bin/airlock
# The sandbox trampoline must be built without cgo (Landlock inside a PID
# namespace hangs with cgo's threads), so the whole binary is.
export CGO_ENABLED := 0

.PHONY: all build run test test-go bench fuzz schemas tidy clean

all: build

build:
	$(GO) build -o $(BIN) .

run: build
	./$(BIN) serve

# -race needs cgo; the race-enabled test binaries re-exec themselves only for
# the sandbox trampoline, which is built separately without cgo.
test-go:
	CGO_ENABLED=1 $(GO) test -race -count=1 ./...

test: build test-go

bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./...

schemas:
	$(GO) run ./schemas/gen

tidy:
	$(GO) mod tidy

clean:
	rm -rf bin
