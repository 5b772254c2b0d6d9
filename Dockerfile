# listingproxy: a static, non-root image holding the binary and the shipped
# configuration (the embedded SQLite demo; its data is generated into /data
# on first start). The entrypoint is the binary, so every command runs:
#
#   docker build --build-arg COMMIT=$(git rev-parse --short HEAD) -t listingproxy .
#   docker run --rm -p 127.0.0.1:8080:8080 listingproxy                # serve the demo
#   docker run --rm listingproxy version                               # or check-config, seed, diff, ...
#   docker run --rm -i listingproxy hash-password < password.txt
#
# Inside the image the API listens on every interface (:8080, so -p works)
# and the admin listener stays on loopback (127.0.0.1:8081), where only the
# HEALTHCHECK reaches it; set admin_listen (or -admin-listen :8081) to
# scrape metrics, and publish it only where operators can reach it.
# See docs/operations.md.

# Fully qualified names: podman and buildah do not assume docker.io.
FROM docker.io/library/golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The build context has no .git (.dockerignore): pass the revision, e.g.
#   docker build --build-arg COMMIT=$(git rev-parse --short HEAD) -t listingproxy .
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X listingproxy/telemetry.commit=${COMMIT}" -o /out/listingproxy ./cmd/listingproxy \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/listingproxy /listingproxy
COPY config.yaml /etc/listingproxy/config.yaml
# The demo database is created in the working directory: it must be
# writable by the non-root user (65532).
COPY --from=build --chown=65532:65532 /out/data /data
WORKDIR /data
USER 65532:65532
EXPOSE 8080
# No shell or curl in distroless: the binary asks its own admin /healthz
# (the address comes from the configuration).
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/listingproxy", "healthcheck", "-config", "/etc/listingproxy/config.yaml"]
ENTRYPOINT ["/listingproxy"]
CMD ["serve", "-config", "/etc/listingproxy/config.yaml", "-listen", ":8080"]
