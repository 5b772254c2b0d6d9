# The stand-in legacy CRM (cmd/legacy-crm) for deploy/compose/compose.yaml:
# a demo upstream for the fleet, never part of a real deployment. Built from
# the repository root (compose's build context ../..), like ../../Dockerfile.
FROM docker.io/library/golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/legacy-crm ./cmd/legacy-crm \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/legacy-crm /legacy-crm
# Its SQLite database (seeded with the demo data on first start) lives here.
COPY --from=build --chown=65532:65532 /out/data /data
WORKDIR /data
USER 65532:65532
EXPOSE 9000
ENTRYPOINT ["/legacy-crm"]
CMD ["-listen", ":9000", "-db", "file:/data/crm.db"]
