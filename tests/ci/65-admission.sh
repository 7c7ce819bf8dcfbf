#!/usr/bin/env bash
# The chart's defaults through a real kube-apiserver's admission (tests/harness/deploy/admission.sh): a
# private etcd + kube-apiserver (the cluster stage's peers, built or reused), the controller pod
# admitted where Pod Security `restricted` is enforced, the node pod refused there and admitted
# in its own `privileged` namespace, every object of `helm template` (RBAC, PDB, monitors with
# prometheus-operator's CRDs) created. Runs before 70-k8s, whose peers it shares.
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ -x .tools/helm/helm && -x .venv/bin/python ]] || bash tests/ci/30-deploy.sh >/dev/null
exec tests/harness/deploy/admission.sh
