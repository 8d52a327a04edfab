# shellcheck shell=bash
# Certificates and kubeconfigs for hack/test-cluster.sh's host processes, signed by the one-node
# cluster's CA, made with openssl and kubectl. Sourced; the caller sets PKI (the directory of the
# keys and certificates) and KUBECTL. What exists is kept, so a run on the same directory keeps
# its clients' trust.

# new_ca NAME CN: a self-signed CA, NAME.crt and NAME.key.
new_ca() {
  [[ -f "${PKI}/$1.crt" ]] && return
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -days 3650 \
    -subj "/CN=$2" -keyout "${PKI}/$1.key" -out "${PKI}/$1.crt" 2>/dev/null
}

# new_cert NAME CA SUBJECT serverAuth|clientAuth [SANS]: a leaf signed by CA.
new_cert() {
  local name=$1 ca=$2 subject=$3 usage=$4 sans=${5:-}
  [[ -f "${PKI}/${name}.crt" ]] && return
  local ext="${PKI}/${name}.ext"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=${usage}"
    if [[ -n "${sans}" ]]; then echo "subjectAltName=${sans}"; fi
  } >"${ext}"
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -subj "${subject}" \
    -keyout "${PKI}/${name}.key" -out "${PKI}/${name}.csr" 2>/dev/null
  openssl x509 -req -in "${PKI}/${name}.csr" -CA "${PKI}/${ca}.crt" -CAkey "${PKI}/${ca}.key" \
    -CAcreateserial -days 3650 -extfile "${ext}" -out "${PKI}/${name}.crt" 2>/dev/null
  rm -f "${PKI}/${name}.csr" "${ext}"
}

# new_sa_key: the service-account signing key pair, sa.key and sa.pub.
new_sa_key() {
  [[ -f "${PKI}/sa.key" ]] && return
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "${PKI}/sa.key" 2>/dev/null
  openssl pkey -in "${PKI}/sa.key" -pubout -out "${PKI}/sa.pub" 2>/dev/null
}

# write_kubeconfig FILE CERT USER SERVER: a kubeconfig for SERVER (trusting ca.crt) as the client
# certificate CERT, certificates embedded.
write_kubeconfig() {
  local file=$1 cert=$2 user=$3 server=$4
  rm -f "${file}"
  "${KUBECTL}" config set-cluster local --kubeconfig "${file}" --embed-certs \
    --certificate-authority "${PKI}/ca.crt" --server "${server}" >/dev/null
  "${KUBECTL}" config set-credentials "${user}" --kubeconfig "${file}" --embed-certs \
    --client-certificate "${PKI}/${cert}.crt" --client-key "${PKI}/${cert}.key" >/dev/null
  "${KUBECTL}" config set-context local --kubeconfig "${file}" --cluster local --user "${user}" >/dev/null
  "${KUBECTL}" config use-context local --kubeconfig "${file}" >/dev/null
}
