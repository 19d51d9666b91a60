# plangate in a container: for GitLab jobs (`image:`) and container actions.
# Build: docker build -t plangate .
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin plangate

FROM debian:bookworm-slim
# git: the plans and the diff need it; bash: steps run under bash; ca-certificates: HTTPS agents.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git=1:2.39.* bash=5.2.* ca-certificates=2023* \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 plangate
COPY --from=build /src/target/release/plangate /usr/local/bin/plangate
USER 10001
WORKDIR /workspace
ENTRYPOINT ["plangate"]
CMD ["--help"]
