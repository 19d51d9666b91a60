# plangate in a container: the image of the GitLab component (templates/plangate.yml)
# and of `docker run`, published to GHCR by .github/workflows/publish-image.yml.
# Build: docker build -t plangate .   (add --build-arg PLANGATE_BUILD_COMMIT=$(git rev-parse HEAD)
# when .git is not in the build context, so `plangate --version` names the commit)
FROM rust:1-bookworm AS build
ARG PLANGATE_BUILD_COMMIT=""
ENV PLANGATE_BUILD_COMMIT=${PLANGATE_BUILD_COMMIT}
WORKDIR /src
COPY . .
# The profile the release archives use: no debug info, stripped, thin LTO.
RUN cargo build --profile dist --locked --bin plangate

FROM debian:bookworm-slim
# Tools typical steps call: bash (steps run under it), git (plans and the diff),
# coreutils, python3, jq; bubblewrap for the step sandboxes (it needs user
# namespaces: run with --security-opt seccomp=unconfined or a runtime that allows
# them; otherwise the Landlock backend is used); ca-certificates for HTTPS agents.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      bash=5.2.* git=1:2.39.* coreutils=9.1-* python3=3.11.* jq=1.6* \
      bubblewrap=0.8.* ca-certificates=2023* \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 plangate
COPY --from=build /src/target/dist/plangate /usr/local/bin/plangate
USER 10001
WORKDIR /workspace
SHELL ["/bin/bash", "-c"]
ENTRYPOINT ["plangate"]
CMD ["--help"]
