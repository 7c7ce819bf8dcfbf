#!/usr/bin/env python3
"""The chart's prometheus-operator objects (ServiceMonitor, PodMonitor, PrometheusRule) against
the operator's own CRDs: each object validated with its CRD's openAPIV3Schema, and every field
it sets known to that schema (the API server would silently prune an unknown one: a typo'd
`relabelings` would just vanish).

usage: validate_crs.py CRD_DIR RENDERED.yaml

CRD_DIR: example/prometheus-operator-crd of the prometheus-operator Go module (37-monitoring
downloads the pinned version through the Go module proxy).
"""
import sys

import jsonschema
import yaml


def unknown_fields(obj, schema, path):
    """Paths in `obj` that `schema` does not describe."""
    out = []
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return out
    if isinstance(obj, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for k, v in obj.items():
            if props and k in props:
                out += unknown_fields(v, props[k], f"{path}.{k}")
            elif isinstance(extra, dict):
                out += unknown_fields(v, extra, f"{path}.{k}")
            elif props is not None or extra is False:
                out.append(f"{path}.{k}")
    elif isinstance(obj, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(obj):
            out += unknown_fields(v, schema["items"], f"{path}[{i}]")
    return out


def main():
    crd_dir, rendered = sys.argv[1:3]
    schemas = {}
    for kind in ("servicemonitors", "podmonitors", "prometheusrules"):
        f = f"{crd_dir}/monitoring.coreos.com_{kind}.yaml"
        crd = yaml.safe_load(open(f))
        for v in crd["spec"]["versions"]:
            schemas[(crd["spec"]["names"]["kind"], f"monitoring.coreos.com/{v['name']}")] = \
                v["schema"]["openAPIV3Schema"]
    docs = [d for d in yaml.safe_load_all(open(rendered)) if d]
    checked = []
    problems = []
    for d in docs:
        if not d["apiVersion"].startswith("monitoring.coreos.com/"):
            continue
        key = (d["kind"], d["apiVersion"])
        if key not in schemas:
            problems.append(f"{key}: no CRD in {crd_dir}")
            continue
        name = f"{d['kind']} {d['metadata']['name']}"
        # OpenAPI v3 schemas are close to draft 4; the schema itself is not checked (its Go
        # regexes are not all Python's).
        for e in jsonschema.Draft4Validator(schemas[key]).iter_errors(d):
            problems.append(f"{name}: {e.message} at {list(e.absolute_path)}")
        for p in unknown_fields(d.get("spec", {}), schemas[key]["properties"]["spec"], "spec"):
            problems.append(f"{name}: {p} is not a field of the CRD (the API server drops it)")
        checked.append(name)
    if not checked:
        problems.append("no prometheus-operator object in the rendering")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"validate_crs: {', '.join(checked)} valid against the operator's CRDs")


if __name__ == "__main__":
    main()
