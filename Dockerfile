# The image the GitLab templates run in (templates/*.yml `image` input): Node for the
# exocomp CLI, OpenTofu, ansible-core, the OpenSSH client and git. Nothing is
# downloaded at job time; the CLI is the same npm tarball that is published.
#
#   docker build -t exocomp:local .
ARG NODE_VERSION=24
ARG TOFU_VERSION=1.10

# OpenTofu's documented way into a custom image: copy the binary from its minimal image.
FROM ghcr.io/opentofu/opentofu:${TOFU_VERSION}-minimal AS tofu

# Pack the CLI exactly as npm publishes it (self-contained bundles, no dependencies).
FROM node:${NODE_VERSION}-bookworm-slim AS package
WORKDIR /src
COPY package.json LICENSE README.md ./
COPY dist/cli.js dist/cli.js
COPY dist/cli-chunks dist/cli-chunks
COPY playbooks playbooks
RUN npm pack --pack-destination /tmp \
 && mv /tmp/exocomp-provision-*.tgz /tmp/exocomp.tgz

FROM node:${NODE_VERSION}-bookworm-slim
# ansible-core from Debian: the same series the test suite runs against.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ansible-core ca-certificates git openssh-client \
 && rm -rf /var/lib/apt/lists/*
COPY --from=tofu /usr/local/bin/tofu /usr/local/bin/tofu
COPY --from=package /tmp/exocomp.tgz /tmp/exocomp.tgz
RUN npm install --global --offline --no-audit --no-fund /tmp/exocomp.tgz \
 && rm /tmp/exocomp.tgz \
 && exocomp --help >/dev/null \
 && tofu version \
 && ansible-playbook --version
# No ENTRYPOINT: a GitLab runner starts the job's shell in the image.
WORKDIR /builds
