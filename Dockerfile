# listingproxy: a static, non-root image with the binary and the default
# configuration (which serves the embedded SQLite demo; its data is generated
# into /data on first start).
#
#   docker build -t listingproxy .
#   docker run --rm -p 8080:8080 -p 8081:8081 listingproxy
#   docker run --rm -p 8080:8080 -p 8081:8081 -v "$PWD/my.yaml:/etc/listingproxy/config.yaml:ro" listingproxy

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/listingproxy ./cmd/listingproxy \
 && mkdir -p /out/data

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/listingproxy /listingproxy
COPY config.yaml /etc/listingproxy/config.yaml
# The demo database is created in the working directory: it must be
# writable by the non-root user (65532).
COPY --from=build --chown=65532:65532 /out/data /data
WORKDIR /data
USER 65532:65532
EXPOSE 8080 8081
# Inside the container the admin listener must be reachable from the host;
# publish 8081 only where operators (and Prometheus) can reach it.
ENTRYPOINT ["/listingproxy", "-config", "/etc/listingproxy/config.yaml", "-admin-listen", "0.0.0.0:8081"]
