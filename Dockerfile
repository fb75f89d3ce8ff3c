# The manager's image, the same shape as `make image` (which needs no Docker): a static binary with
# its version, CA certificates, user 65532:65532, no shell, OCI labels, entrypoint /manager.
# test/image checks this file.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG REVISION=unknown

WORKDIR /workspace
# Cache dependencies before copying the source, so a source change does not re-download modules.
COPY go.mod go.mod
COPY go.sum go.sum
RUN go mod download

COPY cmd/ cmd/
COPY api/ api/
COPY internal/ internal/

# A static binary: the runtime image has no libc.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath \
    -ldflags="-s -w -X github.com/acko-io/acko/internal/version.Version=${VERSION} -X github.com/acko-io/acko/internal/version.Revision=${REVISION}" \
    -o manager ./cmd

# distroless static, non-root: CA certificates, /etc/passwd with user 65532, no shell.
FROM gcr.io/distroless/static:nonroot
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title=acko \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${REVISION} \
      org.opencontainers.image.source=https://github.com/acko-io/acko
WORKDIR /
COPY --from=builder /workspace/manager /manager
USER 65532:65532

ENTRYPOINT ["/manager"]
