# samsa: drop-in for the apache/kafka image in a docker-compose file. The
# KAFKA_* environment variables of that image are read as it reads them.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/samsa ./cmd/samsa
# The data directory, owned by distroless's nonroot user (uid/gid 65532),
# so that a fresh named volume mounted there is writable: Docker copies
# the ownership of the image's directory into a new volume.
RUN mkdir -p /out/data && chown 65532:65532 /out/data && chmod 0750 /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/samsa /usr/local/bin/samsa
COPY --from=build --chown=65532:65532 /out/data /var/lib/kafka/data
USER 65532:65532
# Default data path: /var/lib/kafka/data, as apache/kafka's docker docs.
# Only advertised.listeners is baked in: with KAFKA_LISTENERS unset,
# listeners are derived from it (PLAINTEXT://:9092), as the apache/kafka
# image does, so a compose file that sets KAFKA_ADVERTISED_LISTENERS alone
# works; one that sets both replaces both.
ENV KAFKA_LOG_DIRS=/var/lib/kafka/data \
    KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092
VOLUME /var/lib/kafka/data
EXPOSE 9092
ENTRYPOINT ["/usr/local/bin/samsa"]
