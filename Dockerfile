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
# /bitnami/kafka is where bitnami compose files mount their volume; samsa
# uses /bitnami/kafka/data when bitnami's variables are given (config/image.go).
RUN mkdir -p /out/data /out/bitnami/kafka/data && chown -R 65532:65532 /out/data /out/bitnami && \
    chmod 0750 /out/data /out/bitnami/kafka /out/bitnami/kafka/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/samsa /usr/local/bin/samsa
COPY --from=build --chown=65532:65532 /out/data /var/lib/kafka/data
COPY --from=build --chown=65532:65532 /out/bitnami /bitnami
USER 65532:65532
# Default data path: /var/lib/kafka/data, as apache/kafka's docker docs and
# cp-kafka; /bitnami/kafka/data when the environment has bitnami's variables.
# It is a default, not KAFKA_LOG_DIRS, so that KAFKA_CFG_LOG_DIRS or a
# server.properties log.dirs still wins.
# Only advertised.listeners is baked in: with KAFKA_LISTENERS unset,
# listeners are derived from it (PLAINTEXT://:9092), as the apache/kafka
# image does, so a compose file that sets KAFKA_ADVERTISED_LISTENERS alone
# works; one that sets both replaces both.
ENV SAMSA_IMAGE_LOG_DIRS=/var/lib/kafka/data \
    KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092
VOLUME /var/lib/kafka/data
EXPOSE 9092
ENTRYPOINT ["/usr/local/bin/samsa"]
