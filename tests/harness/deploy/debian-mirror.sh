# Sourced by tests/ci/60-image.sh and tests/harness/k8s/lib/images.sh, which debootstrap the
# driver image's debian:bookworm-slim base from the mirror the machine's apt already uses (no
# other is reachable here).
#
#   debian_mirror   the bookworm mirrors of the apt sources (deb822 .sources, then one-line
#                   lists), one a line; nothing when there is none

debian_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        awk -v RS= '/(^|\n)Suites:([^\n]*[ \t])?bookworm([ \t]|\n|$)/ {
            if (match($0, /(^|\n)URIs:[ \t]*[^ \t\n]+/)) {
                s = substr($0, RSTART, RLENGTH); sub(/^\n?URIs:[ \t]*/, "", s); print s; exit
            }
        }' "$f"
    done
    # One-line form: `deb [options] URL bookworm components`.
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        sed -E 's/\[[^]]*\]//' | awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' || true
}
