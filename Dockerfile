# The operator image for those with Docker: the same image as `make image`
# (hack/image, docs/image.md), a static binary on an empty base, run as a
# non-root user. No templates: the kind folders come at run time from
# ConfigMaps or a mounted directory.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg REVISION=$(git rev-parse HEAD) -t operator:dev .
# The builder pinned by digest (golang:1.26.8's multi-platform index), so that
# a rebuild of the same commit uses the same toolchain and base; bump both
# together.
FROM --platform=$BUILDPLATFORM golang:1.26.8@sha256:3c3e25a4da13fd0478eed2df1eb35a0e667094a7124d3993a6a1d30f71c17e79 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd cmd
COPY engine engine
ARG VERSION=dev
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=linux GOARCH=${TARGETARCH} go build -trimpath -ldflags "-s -w -X github.com/tmplop/operator/cmd/operator/app.version=${VERSION}" -o /operator ./cmd/operator

FROM scratch
ARG VERSION=dev
ARG REVISION=
ARG SOURCE=https://github.com/tmplop/operator
LABEL org.opencontainers.image.title=operator \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.source=${SOURCE} \
      org.opencontainers.image.revision=${REVISION}
COPY --from=build /operator /operator
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/operator", "run"]
