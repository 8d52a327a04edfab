#!/usr/bin/env python3
"""Copies the upstream CRDs into artifacts/crds and applies the few changes README.md lists.

Run from the repository root: THIRD_PARTY_DIR=<dir> python3 artifacts/crds/sync-upstream.py
Needs the modules in the Go module cache (go mod download -json <module>@<version> prints Dir) and,
for Steward's CRDs, THIRD_PARTY_DIR: the directory of the two source archives hack/build-steward.sh
builds from (they are not on the module proxy, so the repository names no default).
"""
import json
import os
import shutil
import subprocess
import sys
import tarfile

import yaml

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)))
# Each Steward file: (archive, member) in THIRD_PARTY_DIR, the commits hack/build-steward.sh pins.
STEWARD_ARCHIVE = "steward-d49041f.tar.gz"
PROVIDER_ARCHIVE = "cluster-api-control-plane-provider-steward-78fc830.tar.gz"
STEWARD_SOURCES = {
    "steward.butlerlabs.dev_tenantcontrolplanes.yaml": (STEWARD_ARCHIVE, "steward/charts/steward/crds/"),
    "steward.butlerlabs.dev_datastores.yaml": (STEWARD_ARCHIVE, "steward/charts/steward/crds/"),
    "steward.butlerlabs.dev_kubeconfiggenerators.yaml": (STEWARD_ARCHIVE, "steward/charts/steward/crds/"),
    "controlplane.cluster.x-k8s.io_stewardcontrolplanes.yaml":
        (PROVIDER_ARCHIVE, "cluster-api-control-plane-provider-steward/config/crd/bases/"),
    "controlplane.cluster.x-k8s.io_stewardcontrolplanetemplates.yaml":
        (PROVIDER_ARCHIVE, "cluster-api-control-plane-provider-steward/config/crd/bases/"),
    "LICENSE.steward": (STEWARD_ARCHIVE, "steward/LICENSE"),
    "LICENSE.capi-provider-steward": (PROVIDER_ARCHIVE, "cluster-api-control-plane-provider-steward/LICENSE"),
}

CAPI = "sigs.k8s.io/cluster-api@v1.14.2"
AWS = "sigs.k8s.io/cluster-api-provider-aws/v2@v2.13.0"
GCP = "sigs.k8s.io/cluster-api-provider-gcp@v1.13.1"

CORE = [
    "cluster.x-k8s.io_clusterclasses.yaml",
    "cluster.x-k8s.io_clusters.yaml",
    "cluster.x-k8s.io_machines.yaml",
    "cluster.x-k8s.io_machinesets.yaml",
    "cluster.x-k8s.io_machinedeployments.yaml",
    "cluster.x-k8s.io_machinedrainrules.yaml",
    "cluster.x-k8s.io_machinepools.yaml",
    "cluster.x-k8s.io_machinehealthchecks.yaml",
    "addons.cluster.x-k8s.io_clusterresourcesets.yaml",
    "addons.cluster.x-k8s.io_clusterresourcesetbindings.yaml",
    "runtime.cluster.x-k8s.io_extensionconfigs.yaml",
    "ipam.cluster.x-k8s.io_ipaddresses.yaml",
    "ipam.cluster.x-k8s.io_ipaddressclaims.yaml",
]

# (module, directory in the module, file, labels to add) — the labels are the ones each
# provider's kustomization adds, restricted to the versions we keep.
UPSTREAM = (
    [(CAPI, "core/config/crd/bases", f, {"cluster.x-k8s.io/provider": "cluster-api"}) for f in CORE]
    + [
        (CAPI, "controlplane/kubeadm/config/crd/bases", f,
         {"cluster.x-k8s.io/provider": "control-plane-kubeadm", "cluster.x-k8s.io/v1beta2": "v1beta2"})
        for f in ["controlplane.cluster.x-k8s.io_kubeadmcontrolplanes.yaml",
                  "controlplane.cluster.x-k8s.io_kubeadmcontrolplanetemplates.yaml"]
    ]
    + [
        (CAPI, "bootstrap/kubeadm/config/crd/bases", f,
         {"cluster.x-k8s.io/provider": "bootstrap-kubeadm", "cluster.x-k8s.io/v1beta2": "v1beta2"})
        for f in ["bootstrap.cluster.x-k8s.io_kubeadmconfigs.yaml",
                  "bootstrap.cluster.x-k8s.io_kubeadmconfigtemplates.yaml"]
    ]
    # AWS v2.13 and GCP v1.13 implement the v1beta1 contract (status.ready, no
    # status.initialization); CAPI v1.14 still accepts it, so their labels stay v1beta1.
    + [
        (AWS, "config/crd/bases", f,
         {"cluster.x-k8s.io/provider": "infrastructure-aws", "cluster.x-k8s.io/v1beta1": "v1beta2"})
        for f in ["infrastructure.cluster.x-k8s.io_awsclusters.yaml",
                  "infrastructure.cluster.x-k8s.io_awsmachinetemplates.yaml",
                  "infrastructure.cluster.x-k8s.io_awsmachines.yaml"]
    ]
    # The identity the AWSCluster's identityRef names (read by ProviderConfig readiness; CAPI
    # does not reference it, so no contract label).
    + [(AWS, "config/crd/bases", "infrastructure.cluster.x-k8s.io_awsclusterstaticidentities.yaml",
        {"cluster.x-k8s.io/provider": "infrastructure-aws"})]
    + [
        (GCP, "config/crd/bases", f,
         {"cluster.x-k8s.io/provider": "infrastructure-gcp", "cluster.x-k8s.io/v1beta1": "v1beta1"})
        for f in ["infrastructure.cluster.x-k8s.io_gcpclusters.yaml",
                  "infrastructure.cluster.x-k8s.io_gcpmachinetemplates.yaml",
                  "infrastructure.cluster.x-k8s.io_gcpmachines.yaml"]
    ]
)

# Steward's CRDs are copied byte for byte, except that the two CAPI kinds get the contract label
# capi-steward's kustomization adds: StewardControlPlane implements the v1beta1 control plane
# contract (status.initialized, status.ready).
STEWARD_FILES = {
    "steward.butlerlabs.dev_tenantcontrolplanes.yaml": None,
    "steward.butlerlabs.dev_datastores.yaml": None,
    "steward.butlerlabs.dev_kubeconfiggenerators.yaml": None,
    "controlplane.cluster.x-k8s.io_stewardcontrolplanes.yaml": {"cluster.x-k8s.io/v1beta1": "v1alpha1"},
    "controlplane.cluster.x-k8s.io_stewardcontrolplanetemplates.yaml": {"cluster.x-k8s.io/v1beta1": "v1alpha1"},
}


def steward_text(name):
    """One Steward file's text, read from its source archive in THIRD_PARTY_DIR."""
    third_party = os.environ.get("THIRD_PARTY_DIR")
    if not third_party:
        sys.exit("THIRD_PARTY_DIR is not set: the directory holding " + STEWARD_ARCHIVE + " and " + PROVIDER_ARCHIVE)
    archive, member = STEWARD_SOURCES[name]
    if member.endswith("/"):
        member += name
    with tarfile.open(os.path.join(third_party, archive)) as tar:
        return tar.extractfile(member).read().decode()


def module_dir(mod):
    out = subprocess.run(["go", "mod", "download", "-json", mod], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["Dir"]


def keep_storage_version_only(crd):
    """Drops every version but the storage version: no conversion webhook runs in our management
    plane, and with conversion strategy None the apiserver would serve the stored object under an
    older version's schema unchanged."""
    versions = [v for v in crd["spec"]["versions"] if v.get("storage")]
    if len(versions) != 1:
        sys.exit(f"{crd['metadata']['name']}: expected one storage version")
    versions[0]["served"] = True
    crd["spec"]["versions"] = versions
    crd["spec"].pop("conversion", None)


def drop_conversion_webhook(name, crd, text):
    """Steward's TenantControlPlane names a conversion webhook (steward-webhook-service) that does
    not run in our management plane. Its CRD has a single version, so nothing ever converts;
    the stanza (the last block of spec) goes."""
    if "conversion" not in crd["spec"]:
        return text
    if len(crd["spec"]["versions"]) != 1:
        sys.exit(f"{name}: a conversion webhook with several versions; it cannot simply be dropped")
    start = text.index("\n  conversion:\n")
    end = start + 1
    lines = text[start + 1:].split("\n")
    for i, line in enumerate(lines[1:], 1):
        if line and not line.startswith("    "):
            break
        end += len(lines[i - 1]) + 1
    else:
        end = len(text)
    return text[:start + 1] + text[end:]


def label(crd, labels):
    crd["metadata"].setdefault("labels", {}).update(labels)


class Dumper(yaml.SafeDumper):
    pass


def str_presenter(dumper, data):
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


Dumper.add_representer(str, str_presenter)


def write(name, crd):
    with open(os.path.join(OUT, name), "w") as f:
        f.write("---\n")
        yaml.dump(crd, f, Dumper=Dumper, sort_keys=False, width=1 << 16)


def main():
    dirs = {}
    for mod, sub, f, labels in UPSTREAM:
        if mod not in dirs:
            dirs[mod] = module_dir(mod)
        with open(os.path.join(dirs[mod], sub, f)) as fh:
            crd = yaml.safe_load(fh)
        keep_storage_version_only(crd)
        label(crd, labels)
        write(f, crd)
    for f, labels in STEWARD_FILES.items():
        # Text edits, so that the rest of the file stays byte for byte as Steward ships it.
        text = steward_text(f)
        crd = yaml.safe_load(text)
        if labels:
            anchor = f"\n  name: {crd['metadata']['name']}\n"
            if text.count(anchor) != 1:
                sys.exit(f"{f}: metadata.name line not found once")
            block = "".join(f"    {k}: {v}\n" for k, v in labels.items())
            text = text.replace(anchor, f"{anchor}  labels:\n{block}", 1)
        text = drop_conversion_webhook(f, crd, text)
        with open(os.path.join(OUT, f), "w") as fh:
            fh.write(text)
    for lic in ["LICENSE.steward", "LICENSE.capi-provider-steward"]:
        with open(os.path.join(OUT, lic), "w") as fh:
            fh.write(steward_text(lic))
    shutil.copyfile(os.path.join(dirs[CAPI], "LICENSE"), os.path.join(OUT, "LICENSE.cluster-api"))
    shutil.copyfile(os.path.join(dirs[AWS], "LICENSE"), os.path.join(OUT, "LICENSE.cluster-api-provider-aws"))
    shutil.copyfile(os.path.join(dirs[GCP], "LICENSE"), os.path.join(OUT, "LICENSE.cluster-api-provider-gcp"))


if __name__ == "__main__":
    main()
