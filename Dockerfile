# Build: a static binary (the SQLite driver is pure Go, so no cgo).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/seckill .

# Run: a small image with CA certificates and a non-root user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/seckill /seckill
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/seckill"]
CMD ["serve"]
