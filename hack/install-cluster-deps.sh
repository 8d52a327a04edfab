#!/usr/bin/env bash
# Installs the Debian packages the one-node cluster (cmd/butler-cluster, make cluster, make
# test-cluster) runs on, with apt-get, only those missing: nothing is downloaded on a machine
# that has them all, so it runs before every make cluster. Needs root (as the cluster does).
#   containerd, runc                  the container runtime (Debian's containerd 1.6)
#   containernetworking-plugins       bridge, host-local, loopback, portmap (/usr/lib/cni)
#   iptables, conntrack               kube-proxy's Service rules
#   iproute2, util-linux, procps      ip (the bridge), setsid, flock, umount, pkill
#   openssl, curl                     the cluster's certificates, health checks
#   git                               the GitOps tests' Git server (git http-backend)
set -euo pipefail

packages=(containerd runc containernetworking-plugins iptables conntrack iproute2 util-linux procps openssl curl git)
missing=()
for p in "${packages[@]}"; do
  [[ "$(dpkg-query -W -f '${db:Status-Status}' "${p}" 2>/dev/null)" == installed ]] || missing+=("${p}")
done
((${#missing[@]})) || exit 0
[[ $(id -u) == 0 ]] || { echo "install-cluster-deps: root is needed to install ${missing[*]}" >&2; exit 1; }
command -v apt-get >/dev/null || { echo "install-cluster-deps: no apt-get; install ${missing[*]} by hand" >&2; exit 1; }
echo "install-cluster-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# --no-install-recommends: containerd would otherwise bring Docker-era extras; Debian's
# containerd package starts no service in a container without systemd, and the cluster runs its
# own containerd on its own socket either way.
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
