# The watcher alone, FROM scratch: a builder on Debian 12 runs the same build.sh as a person
# would, and the final image holds only the static binary.
FROM debian:12 AS build
WORKDIR /src
COPY . .
RUN ./build.sh build

FROM scratch
COPY --from=build /src/build/noderecover /noderecover
USER 65532:65532
ENTRYPOINT ["/noderecover"]
