#!/usr/bin/env bash
# Packages the agent's Helm chart for a release: chart version and
# appVersion are the release's, so the chart's image tag (its appVersion by
# default) is the release's image and its pull policy IfNotPresent.
#   hack/package-chart.sh v1.2.3 dist/   ->  dist/rebootwatch-agent-1.2.3.tgz
# HELM names the helm binary (default: bin/helm, `make helm`).
set -euo pipefail
version=${1:?usage: hack/package-chart.sh VERSION OUTDIR}
out=${2:?usage: hack/package-chart.sh VERSION OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
helm=${HELM:-$here/bin/helm}
# A chart version is semver without the v; the image tag keeps it.
"$helm" package "$here/deploy/helm/rebootwatch-agent" --destination "$out" \
  --version "${version#v}" --app-version "$version"
