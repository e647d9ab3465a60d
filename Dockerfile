# samsa: drop-in for the apache/kafka image in a docker-compose file. The
# KAFKA_* environment variables of that image are read as it reads them.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/samsa ./cmd/samsa

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/samsa /usr/local/bin/samsa
# Same data path and port as apache/kafka's defaults in its docker docs.
ENV KAFKA_LOG_DIRS=/var/lib/kafka/data \
    KAFKA_LISTENERS=PLAINTEXT://:9092 \
    KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092
VOLUME /var/lib/kafka/data
EXPOSE 9092
ENTRYPOINT ["/usr/local/bin/samsa"]
