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

FROM debian:bookworm-slim AS runtime
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

# The same image with the agent CLIs plangate has presets for (Claude Code,
# Codex, Gemini CLI), pinned, for plans whose agents run a CLI (the GitLab
# component's `image` input, e.g. ghcr.io/<owner>/plangate:0.1.0-agents).
# Node.js 22 (Claude Code needs 22+, Gemini CLI 20+; Debian bookworm has 18)
# is taken from the official image. Installed under /usr/local, where a
# sandboxed step can run them. Build: docker build --target agents .
FROM runtime AS agents
USER 0
COPY --from=node:22-bookworm-slim /usr/local/bin/node /usr/local/bin/node
COPY --from=node:22-bookworm-slim /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && npm install -g --no-audit --no-fund \
      @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0 @google/gemini-cli@0.61.0 \
 && npm cache clean --force \
 && claude --version && codex --version && gemini --version
USER 10001

# The default target: the image without agent CLIs.
FROM runtime
