# The same image as `./build.sh image`, for those with Docker: a builder on Debian 12 runs
# build.sh dist (every architecture, cross-compiled on the build platform), and the final
# image, FROM scratch, holds only the target's static binary, run as 65532:65532.
#   docker buildx build -f scratch.Dockerfile --platform linux/amd64,linux/arm64,linux/arm/v7 .
FROM --platform=$BUILDPLATFORM debian:12 AS build
ARG TARGETARCH
WORKDIR /src
COPY . .
RUN ./build.sh dist && \
    arch=$TARGETARCH && if [ "$arch" = arm ]; then arch=armhf; fi && \
    cp build/dist/noderecover-"$(cat VERSION)"-linux-"$arch" /noderecover

FROM scratch
COPY --from=build /noderecover /noderecover
USER 65532:65532
ENTRYPOINT ["/noderecover"]
CMD ["run"]
