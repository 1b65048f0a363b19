# The dpsim image of docker-compose.yml: one static binary and the shipped scenarios.
#   docker build -t dpsim:local .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/dpsim ./cmd/dpsim

FROM debian:bookworm-slim
COPY --from=build /out/dpsim /usr/local/bin/dpsim
COPY scenarios /scenarios
ENTRYPOINT ["dpsim"]
CMD ["--help"]
