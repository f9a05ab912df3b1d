# writeback container image. Build from the repository root:
#   docker build -t writeback:dev .
# Stages: kustomize and helm (built from the Go module proxy) -> wheels (writeback and its dependencies) -> runtime.
# The runtime stage has no compiler, no Go and no pip: only Python, git, openssh-client, kustomize, helm and writeback.
# Bases are pinned by version tag; pin them by digest too (image@sha256:...) in your registry mirror.

ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm
ARG GO_IMAGE=golang:1.26.8-bookworm

# --- kustomize: the same pinned module as the test control plane (tests/controlplane/go/kustomize/go.mod) ----------
FROM ${GO_IMAGE} AS kustomize
ARG KUSTOMIZE_VERSION=v5.8.2
ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
WORKDIR /src
COPY tests/controlplane/go/kustomize/go.mod tests/controlplane/go/kustomize/go.sum ./
RUN go mod download
COPY tests/controlplane/go/kustomize/main.go ./
RUN go build -trimpath \
      -ldflags "-s -w -X sigs.k8s.io/kustomize/api/provenance.version=kustomize/${KUSTOMIZE_VERSION}" \
      -o /out/kustomize . \
 && /out/kustomize version

# --- helm: the same version and build flags as the tests' helm (tests/helm/build) ---------------------------------
FROM ${GO_IMAGE} AS helm
ARG HELM_VERSION=v3.22.0
ARG HELM_K8S_MINOR=37
ENV CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false GOBIN=/out
RUN go install -trimpath \
      -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} \
        -X helm.sh/helm/v3/internal/version.gitTreeState=clean \
        -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${HELM_K8S_MINOR} \
        -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${HELM_K8S_MINOR}" \
      helm.sh/helm/v3/cmd/helm@${HELM_VERSION} \
 && /out/helm version --short

# --- wheels: writeback and every dependency as wheels, so the runtime stage installs offline ----------------------
# The versions are those of requirements.lock (uv pip compile, checked in; tests/cli/test_lock.py keeps it in step).
FROM ${PYTHON_IMAGE} AS wheels
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md requirements.lock ./
COPY writeback/ writeback/
RUN pip wheel --wheel-dir /wheels -c requirements.lock .

# --- runtime -------------------------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/home/writeback \
    TMPDIR=/tmp
RUN apt-get update \
 && apt-get install -y --no-install-recommends git openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 writeback \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/writeback --create-home \
      --shell /usr/sbin/nologin writeback \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/writeback /home/writeback/.ssh \
 && install -d -m 0755 /etc/writeback
COPY --from=kustomize /out/kustomize /usr/local/bin/kustomize
COPY --from=helm /out/helm /usr/local/bin/helm
RUN --mount=type=bind,from=wheels,source=/wheels,target=/wheels \
    python -m pip install --no-cache-dir --no-index --find-links=/wheels writeback \
 && python -m pip uninstall -y setuptools wheel pip \
 && writeback --version && kustomize version && helm version --short && git --version && ssh -V
WORKDIR /var/lib/writeback
USER 10001:10001
EXPOSE 9090
ENTRYPOINT ["writeback"]
CMD ["run", "--config", "/etc/writeback/config.yaml", "--workdir", "/var/lib/writeback"]
