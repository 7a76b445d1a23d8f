# The operator image: a static binary, the template folders, nothing else.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd cmd
COPY engine engine
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/tmplop/operator/cmd/operator/app.version=${VERSION}" -o /operator ./cmd/operator

FROM gcr.io/distroless/static:nonroot
COPY --from=build /operator /operator
COPY templates /templates
USER 65532:65532
ENTRYPOINT ["/operator", "run", "--templates", "/templates"]
