#!/usr/bin/env bash
# Sourced by the conformance stages (40-sanity.sh, tests/harness/openstack/sanity.sh): a run passes only
# when its skips are exactly those in sanity/ci/expected-skips.txt and at least
# SANITY_MIN_PASSED cases passed. A driver that stops advertising a capability turns cases
# into SKIPs, and the exit code alone would stay green.
SANITY_MIN_PASSED=${SANITY_MIN_PASSED:-116}

# sanity_floor LABEL OUTPUT_FILE: 0 when the run in OUTPUT_FILE (the runner's stdout) meets
# the floor, else 1 with what differs on stderr.
sanity_floor() {
    local label=$1 out=$2 expected=sanity/ci/expected-skips.txt
    local last passed skipped bad=0
    last=$(tail -n 1 "$out")
    if [[ ! $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
        echo "$label: no closing 'N passed, N failed, N skipped' line (last line: $last)" >&2
        return 1
    fi
    passed=${BASH_REMATCH[1]} skipped=${BASH_REMATCH[3]}
    local want got
    want=$(grep -v -e '^#' -e '^$' "$expected" | sort)
    got=$(sed -n 's/^SKIP  \(.*\): .*/\1/p' "$out" | sed 's/: .*//' | sort)
    if [[ $(grep -c . <<<"$got") -ne $skipped ]]; then
        echo "$label: $skipped skipped by the closing line, but $(grep -c . <<<"$got") SKIP lines" >&2
        bad=1
    fi
    local extra missing
    extra=$(comm -13 <(echo "$want") <(echo "$got") | grep . || true)
    missing=$(comm -23 <(echo "$want") <(echo "$got") | grep . || true)
    if [[ -n $extra ]]; then
        echo "$label: skipped, but not expected to be (a capability no longer advertised? if" \
            "intended, list it in $expected):" >&2
        sed 's/^/  /' <<<"$extra" >&2
        bad=1
    fi
    if [[ -n $missing ]]; then
        echo "$label: expected to be skipped, but ran (now supported? remove it from $expected):" >&2
        sed 's/^/  /' <<<"$missing" >&2
        bad=1
    fi
    if ((passed < SANITY_MIN_PASSED)); then
        echo "$label: only $passed cases passed; at least $SANITY_MIN_PASSED must" >&2
        bad=1
    fi
    return "$bad"
}
