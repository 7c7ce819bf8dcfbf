# Certificates and kubeconfigs of the test cluster (openssl, no kubeadm); sourced by
# tests/harness/k8s/cluster. One CA signs everything; the kubelet gets a static serving and client
# certificate (no CSR flow), so no bootstrap token is needed.

# cert NAME CN O [SAN]: $pki/NAME.{key,crt} signed by the CA (client and server usages).
cert() {
    local name=$1 cn=$2 o=$3 san=${4:-} subj
    subj="/CN=$cn"
    [[ -n $o ]] && subj="/O=$o$subj"
    openssl genrsa -out "$pki/$name.key" 2048 2>/dev/null
    openssl req -new -key "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr" 2>/dev/null
    {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=clientAuth,serverAuth"
        [[ -n $san ]] && echo "subjectAltName=$san"
    } >"$pki/$name.ext"
    openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
        -CAcreateserial -days 30 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
    rm -f "$pki/$name.csr" "$pki/$name.ext"
}

# kubeconfig NAME CERT: $state/NAME.kubeconfig, authenticating with $pki/CERT.{crt,key}.
kubeconfig() {
    cat >"$state/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: cinder-csi-test
  cluster:
    certificate-authority: $pki/ca.crt
    server: https://$node_ip:$apiserver_port
users:
- name: $1
  user:
    client-certificate: $pki/$2.crt
    client-key: $pki/$2.key
contexts:
- name: $1
  context: {cluster: cinder-csi-test, user: $1}
current-context: $1
EOF
}

pki_make() {
    [[ -f $pki/.done ]] && return 0
    mkdir -p "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" \
        -days 30 -subj "/CN=cinder-csi-test-ca" 2>/dev/null
    cert apiserver kube-apiserver "" \
        "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,DNS:$node_name,IP:127.0.0.1,IP:$node_ip,IP:$service_ip"
    cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
    cert admin cinder-csi-test-admin system:masters
    cert controller-manager system:kube-controller-manager ""
    cert scheduler system:kube-scheduler ""
    cert kube-proxy system:kube-proxy ""
    cert kubelet "system:node:$node_name" system:nodes "DNS:$node_name,IP:$node_ip,IP:127.0.0.1"
    openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
    openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
    local k
    for k in admin controller-manager scheduler kube-proxy kubelet; do kubeconfig "$k" "$k"; done
    touch "$pki/.done"
}
