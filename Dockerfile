# One image with every binary the project ships: hypershift (the CLI),
# hypershift-operator and control-plane-operator.

FROM docker.io/library/golang:1.26.8-bookworm AS builder
WORKDIR /src
ARG VERSION=v0.0.0-dev
ARG COMMIT=unknown
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go build \
      -ldflags "-s -w -X github.com/hypershift-le/hypershift/support/version.Version=${VERSION} -X github.com/hypershift-le/hypershift/support/version.Commit=${COMMIT}" \
      -o /out/ ./cmd/hypershift ./hypershift-operator ./control-plane-operator

# distroless/static: no shell, no package manager, CA certificates and tzdata;
# the nonroot tag runs as UID/GID 65532. `make image` builds the same image
# without an engine (hack/images): its test fails when the programs, the user
# or the entrypoint below differ from hack/images.Product.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=builder /out/hypershift /out/hypershift-operator /out/control-plane-operator /usr/bin/
USER 65532:65532
ENTRYPOINT ["/usr/bin/hypershift-operator"]
