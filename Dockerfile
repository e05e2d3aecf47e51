# syntax=docker/dockerfile:1
# A static gale binary in an image with nothing else, run as a non-root
# user. Build and run:
#   docker build -t gale .
#   docker run --rm -p 8080:8080 -v "$PWD/gale.yaml:/etc/gale/gale.yaml:ro" --read-only gale
# The config must listen on all interfaces (listen: [":8080"]) to be
# reachable from outside the container; see examples/kubernetes/.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# CGO_ENABLED=0: no libc, so the binary runs in an empty image.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/gale ./cmd/gale

# distroless/static holds CA certificates, /etc/passwd with the nonroot
# user (65532) and time zone data, and no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gale /usr/local/bin/gale
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/gale"]
CMD ["serve", "-c", "/etc/gale/gale.yaml"]
