#!/usr/bin/env bash
# Credential rotation as operators do it, on the cluster of tests/harness/k8s/cluster with the test
# cloud's backend (tests/harness/k8s/cluster up --backend openstack): the chart's Secret is edited in
# place (kubectl, not helm: no checksum roll) and the kubelet swaps the mounted file; the
# controller rereads it (src/app/reload.rs) and provisioning goes on, without a restart:
#
#   user A made in Keystone (a member of the test cloud's project) with an application
#   credential, the Secret moved to it, a PVC provisioned; user B likewise, the Secret moved to
#   B and at once a PVC (provisioned across the swap); the driver on B, A's credential deleted
#   (Keystone refuses it: 404), a PVC provisioned on B alone; the Secret back to the original
#   password, a PVC provisioned on it. Each PVC Bound with its volume `available` in Cinder's
#   API, and made by the user whose credential the Secret held (the volume's user_id: the real
#   state says which credential the driver used; the password's user stays valid throughout,
#   so a driver that never rotated fails here). No ProvisioningFailed event; the controller pod
#   the same one (uid, restarts) throughout.
#
# Cleanup on every exit: the Secret restored to what it was and the driver back on it, the PVCs
# and their Cinder volumes deleted (leak check), users A and B deleted (their credentials with
# them). The driver's log line
# "Keystone accepted the new credentials" is only the point to go on from; what passes is the
# PVCs and Cinder's volumes. Last line: "rotation: OK (N s)" or "rotation: FAILED: ...".
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=tests/harness/k8s/lib.sh
. "$repo/tests/harness/k8s/lib.sh"

ns=cinder-csi-rotation
sc=csi-cinder-sc-delete
t0=$SECONDS
tmp=$(mktemp -d)
chmod 700 "$tmp"
K8S_BACKEND=openstack
secret_name="" ctl="" restored=1
users=()

step() { printf '[%4d s] rotation: %s\n' $((SECONDS - t0)) "$*"; }
fail() {
    echo "rotation: FAILED: $*"
    diagnose "$ns"
    exit 1
}

# set_secret FILE: the chart's Secret's cloud.conf becomes FILE (never printed).
set_secret() {
    local b64
    b64=$(base64 -w0 <"$1")
    k -n "$K8S_DRIVER_NS" patch secret "$secret_name" --type merge \
        -p "{\"data\":{\"cloud.conf\":\"$b64\"}}" >/dev/null
}

# accepted N WHAT: waits until the controller has logged N "Keystone accepted" lines, the
# last for WHAT (its credential's description).
accepted() {
    local n=$1 what=$2 lines
    for _ in $(seq 120); do
        lines=$(k -n "$K8S_DRIVER_NS" logs "$ctl" -c cinder-csi-plugin | grep 'Keystone accepted the new credentials' || true)
        if (($(printf '%s' "$lines" | grep -c .) >= n)) && [[ $(tail -1 <<<"$lines") == *"$what"* ]]; then
            return 0
        fi
        sleep 2
    done
    return 1
}

# rotation_user NAME: a new Keystone user, member of the test cloud's project, and an
# application credential of it (only its owner may make one); prints "USER_ID CRED_ID SECRET".
rotation_user() {
    local password uid role
    password=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
    uid=$(ostack_api --admin identity POST /users \
        "{\"user\": {\"name\": \"$1\", \"password\": \"$password\", \"domain_id\": \"default\", \"description\": \"cinder-csi tests/harness/k8s/rotation.sh\"}}" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["user"]["id"])')
    users+=("$uid")
    for role in member reader; do
        role=$(ostack_api --admin identity GET "/roles?name=$role" | python3 -c 'import json, sys; print(json.load(sys.stdin)["roles"][0]["id"])')
        ostack_api --admin identity PUT "/projects/$project_id/users/$uid/roles/$role" >/dev/null
    done
    python3 - "$keystone" "$uid" "$password" "$project_id" "$1" <<'EOF'
import json, secrets, sys, urllib.error, urllib.request
url, uid, password, project, name = sys.argv[1:]
def call(path, body, token=None):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    if token:
        req.add_header("X-Auth-Token", token)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.headers.get("X-Subject-Token"), json.load(r)
    except urllib.error.HTTPError as e:
        sys.exit(f"rotation: POST {path}: {e.code} {e.read().decode(errors='replace')[:400]}")
token, _ = call("/auth/tokens", {"auth": {"identity": {"methods": ["password"], "password": {"user": {"id": uid, "password": password}}},
                                          "scope": {"project": {"id": project}}}})
secret = secrets.token_urlsafe(24)
# Its roles named (member; reader comes implied): without them Keystone takes the token's, and
# the test cloud's Keystone once answered 400 for a token's role the user did not hold
# ("service", 2026-12-05 10:37, beside a concurrent token validation by Cinder).
_, got = call(f"/users/{uid}/application_credentials",
              {"application_credential": {"name": name, "secret": secret, "roles": [{"name": "member"}]}}, token)
print(uid, got["application_credential"]["id"], secret)
EOF
}

# volume_user ID: the Keystone user that made Cinder volume ID.
volume_user() { ostack_api block-storage GET "/volumes/$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["volume"]["user_id"])'; }

# conf_for ID SECRET > FILE: the original cloud.conf with the application credential in place
# of the user and password.
conf_for() {
    python3 - "$tmp/original" "$1" "$2" <<'EOF'
import re, sys
src, cid, secret = sys.argv[1:]
out, section = [], None
drop = re.compile(r"\s*(username|user-name|password|user-id|user-domain-[a-z]+|tenant-[a-z-]+|"
                  r"project-[a-z-]+|domain-[a-z]+|application-credential-[a-z]+)\s*=")
for line in open(src).read().splitlines():
    m = re.match(r"\s*\[([^]]+)\]", line)
    if m:
        section = m.group(1)
        out.append(line)
        if section == "Global":
            out += [f"application-credential-id = {cid}", f"application-credential-secret = {secret}"]
        continue
    if section == "Global" and drop.match(line):
        continue
    out.append(line)
print("\n".join(out))
EOF
}

# pvc NAME USER_ID...: an Immediate claim of the chart's class; waits for Bound; checks its
# volume in Cinder's API: available, made for this claim, by one of these users.
pvc() {
    local name=$1 pv handle by
    shift
    k -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $name}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: $sc
  resources: {requests: {storage: 1Gi}}
EOF
    k -n "$ns" wait --for=jsonpath='{.status.phase}'=Bound "pvc/$name" --timeout=180s >/dev/null \
        || fail "PVC $name not bound"
    pv=$(k -n "$ns" get pvc "$name" -o jsonpath='{.spec.volumeName}')
    handle=$(k get pv "$pv" -o jsonpath='{.spec.csi.volumeHandle}')
    record_handle "$handle" "$pv"
    ostack_api block-storage GET "/volumes/$handle" | python3 -c '
import json, sys
v = json.load(sys.stdin)["volume"]
md = v.get("metadata") or {}
want = {"csi.storage.k8s.io/pvc/name": sys.argv[1], "csi.storage.k8s.io/pvc/namespace": sys.argv[2]}
assert v["status"] == "available", v["status"]
assert all(md.get(k) == x for k, x in want.items()), md
print("  cinder volume", v["id"], v["status"], "pvc", sys.argv[2] + "/" + sys.argv[1])' "$name" "$ns" \
        || fail "PVC $name: its volume $handle is not as it should be in Cinder"
    by=$(volume_user "$handle")
    [[ " $* " == *" $by "* ]] || fail "PVC $name: its volume was made by user $by, want one of: $*"
    echo "  made by user $by"
}

cleanup() {
    local rc=$?
    trap - EXIT
    set +e
    step "cleanup"
    # The driver back on the original credentials first: the claims' volumes are deleted with
    # whatever it holds, and A or B may be gone.
    if ((!restored)); then
        set_secret "$tmp/original"
        accepted $((accepts + 1)) "password of user" || { echo "rotation: the driver did not go back to the original credentials" >&2; rc=1; }
    fi
    k -n "$ns" delete pvc --all --wait=true --timeout=180s >/dev/null 2>&1
    for pv in "${RECORDED_PVS[@]}"; do k wait --for=delete "pv/$pv" --timeout=180s >/dev/null 2>&1; done
    k delete namespace "$ns" --ignore-not-found --wait=true --timeout=3m >/dev/null 2>&1
    for u in "${users[@]}"; do ostack_api --admin identity DELETE "/users/$u" >/dev/null 2>&1; done
    local leaks
    leaks=$(leak_check "$ns")
    if [[ -n $leaks ]]; then echo "rotation: left: $leaks" >&2; rc=1; fi
    rm -rf "$tmp"
    ((rc)) || echo "rotation: OK ($((SECONDS - t0)) s)"
    exit "$rc"
}
trap cleanup EXIT

[[ $(k8s_backend) == openstack ]] || fail "the cluster's driver is not on the test cloud (tests/harness/k8s/cluster up --backend openstack)"
ctl=$(plugin_pod controller)
uid=$(k -n "$K8S_DRIVER_NS" get pod "$ctl" -o jsonpath='{.metadata.uid}')
restarts=$(k -n "$K8S_DRIVER_NS" get pod "$ctl" -o jsonpath='{.status.containerStatuses[?(@.name=="cinder-csi-plugin")].restartCount}')
secret_name=$(k -n "$K8S_DRIVER_NS" get pod "$ctl" -o jsonpath='{.spec.volumes[?(@.secret)].secret.secretName}')
[[ -n $secret_name && $secret_name != *" "* ]] || fail "the controller mounts no single Secret (found '$secret_name')"
k -n "$K8S_DRIVER_NS" get secret "$secret_name" -o jsonpath='{.data.cloud\.conf}' | base64 -d >"$tmp/original"
grep -q '^password' "$tmp/original" || fail "the Secret's cloud.conf is not the test cloud's password one"
accepts=$(k -n "$K8S_DRIVER_NS" logs "$ctl" -c cinder-csi-plugin | grep -c 'Keystone accepted the new credentials' || true)
# shellcheck disable=SC1090
keystone=$(. "${OSTACK_ENV:-/var/tmp/cinder-csi-ostack/env.sh}" && echo "$OS_AUTH_URL")
# shellcheck disable=SC1090
project_id=$(. "${OSTACK_ENV:-/var/tmp/cinder-csi-ostack/env.sh}" && echo "$OSTACK_PROJECT_ID")
demo=$(ostack_api --admin identity GET '/users?name=demo' | python3 -c 'import json, sys; print(json.load(sys.stdin)["users"][0]["id"])')
[[ -n $keystone && -n $project_id && -n $demo ]] || fail "the test cloud's env names no Keystone, project or member user"
k create namespace "$ns" >/dev/null
step "controller $ctl (uid $uid), Secret $K8S_DRIVER_NS/$secret_name, the password's user $demo"

step "A: a user with an application credential, the Secret moved to it"
read -r user_a a a_secret < <(rotation_user "cinder-csi-rotation-a-$$")
[[ -n $a && -n $a_secret ]] || fail "could not make user A's application credential"
conf_for "$a" "$a_secret" >"$tmp/a"
restored=0
set_secret "$tmp/a"
accepts=$((accepts + 1))
accepted "$accepts" "application credential $a" || fail "the driver did not take A within 240 s"
pvc on-a "$user_a"

step "B: a second one, the Secret moved to it, a claim at once"
read -r user_b b b_secret < <(rotation_user "cinder-csi-rotation-b-$$")
[[ -n $b && -n $b_secret ]] || fail "could not make user B's application credential"
conf_for "$b" "$b_secret" >"$tmp/b"
set_secret "$tmp/b"
pvc across-swap "$user_a" "$user_b"
accepts=$((accepts + 1))
accepted "$accepts" "application credential $b" || fail "the driver did not take B within 240 s"

step "A's credential deleted in Keystone"
ostack_api --admin identity DELETE "/users/$user_a/application_credentials/$a" >/dev/null
said=$(ostack_api identity POST /auth/tokens \
    "{\"auth\": {\"identity\": {\"methods\": [\"application_credential\"], \"application_credential\": {\"id\": \"$a\", \"secret\": \"$a_secret\"}}}}" 2>&1 >/dev/null) \
    && fail "A still authenticates after its deletion"
# Refused: the test cloud's Keystone answers 404 for a credential ID it no longer has.
[[ $said == *"-> 404"* || $said == *"-> 401"* ]] || fail "A's authentication after its deletion: want 404 or 401, got: $said"
pvc on-b-alone "$user_b"

step "the Secret back to the original password, a claim on it"
set_secret "$tmp/original"
restored=1
accepts=$((accepts + 1))
accepted "$accepts" "password of user" || fail "the driver did not go back to the original credentials within 240 s"
pvc back-on-original "$demo"

failed=$(k -n "$ns" get events --field-selector reason=ProvisioningFailed -o name | wc -l)
((failed == 0)) || fail "$failed ProvisioningFailed event(s): $(k -n "$ns" get events --field-selector reason=ProvisioningFailed)"
[[ $(k -n "$K8S_DRIVER_NS" get pod "$ctl" -o jsonpath='{.metadata.uid}') == "$uid" ]] || fail "the controller pod was replaced"
now=$(k -n "$K8S_DRIVER_NS" get pod "$ctl" -o jsonpath='{.status.containerStatuses[?(@.name=="cinder-csi-plugin")].restartCount}')
[[ $now == "$restarts" ]] || fail "the controller restarted ($restarts -> $now restarts)"
step "4 claims provisioned across three rotations, each by its credential's user; none failed; the controller never restarted"
