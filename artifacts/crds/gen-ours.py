#!/usr/bin/env python3
"""Writes the CRDs that are ours: butler's bootstrap and local infrastructure providers, and the
minimal structural stand-ins for providers whose Go modules the module proxy here does not serve
(KubeVirt, Nutanix, Proxmox, Azure, Kamaji's KamajiControlPlane). README.md says which is which.

Run from the repository root: python3 artifacts/crds/gen-ours.py
"""
import os

import yaml

OUT = os.path.dirname(os.path.abspath(__file__))

# ---- schema helpers -------------------------------------------------------------------------


def s(desc=None, **kw):
    d = {"type": "string"}
    if desc:
        d["description"] = desc
    d.update(kw)
    return d


def i32(desc=None, **kw):
    d = {"type": "integer", "format": "int32"}
    if desc:
        d["description"] = desc
    d.update(kw)
    return d


def i64(desc=None, **kw):
    d = {"type": "integer", "format": "int64"}
    if desc:
        d["description"] = desc
    d.update(kw)
    return d


def b(desc=None):
    d = {"type": "boolean"}
    if desc:
        d["description"] = desc
    return d


def obj(props, required=None, desc=None, **kw):
    d = {"type": "object", "properties": props}
    if required:
        d["required"] = required
    if desc:
        d["description"] = desc
    d.update(kw)
    return d


def arr(items, desc=None, **kw):
    d = {"type": "array", "items": items}
    if desc:
        d["description"] = desc
    d.update(kw)
    return d


def smap(desc=None):
    d = {"type": "object", "additionalProperties": {"type": "string"}}
    if desc:
        d["description"] = desc
    return d


def free(desc):
    """A subtree that is free-form upstream (or that we never write): kept, not validated."""
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "description": desc}


def quantity(desc=None):
    d = {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
        "x-kubernetes-int-or-string": True,
    }
    if desc:
        d["description"] = desc
    return d


def resource_list(desc=None):
    d = {"type": "object", "additionalProperties": quantity()}
    if desc:
        d["description"] = desc
    return d


def endpoint(port_type=i32):
    return obj({"host": s("The hostname on which the API server is serving."),
                "port": port_type("The port on which the API server is serving.")},
               desc="The endpoint used to communicate with the control plane.")


def object_reference(desc):
    return obj({k: s() for k in ["apiVersion", "kind", "name", "namespace", "fieldPath", "resourceVersion", "uid"]},
               desc=desc, **{"x-kubernetes-map-type": "atomic"})


def conditions(v1beta1=False):
    """metav1.Condition (v1beta2 contract) or CAPI v1beta1 conditions (type, status, severity)."""
    props = {
        "type": s(),
        "status": s(),
        "reason": s(),
        "message": s(),
        "lastTransitionTime": s(format="date-time"),
    }
    if v1beta1:
        props["severity"] = s()
        req = ["type", "status"]
        return arr(obj(props, req))
    props["observedGeneration"] = i64(minimum=0)
    return arr(obj(props, ["type", "status", "lastTransitionTime"]),
               **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]})


def machine_addresses():
    return arr(obj({"type": s(enum=["Hostname", "ExternalIP", "InternalIP", "ExternalDNS", "InternalDNS"]),
                    "address": s()}, ["type", "address"]))


def v1beta1_infra_status(extra=None):
    props = {
        "ready": b("Ready denotes that the infrastructure is ready (CAPI v1beta1 contract)."),
        "failureDomains": free("Failure domains as the provider reports them."),
        "failureReason": s(),
        "failureMessage": s(),
        "conditions": conditions(v1beta1=True),
    }
    props.update(extra or {})
    return obj(props)


def v1beta1_machine_status(extra=None):
    props = {
        "ready": b("Ready denotes that the machine is ready (CAPI v1beta1 contract)."),
        "addresses": machine_addresses(),
        "failureReason": s(),
        "failureMessage": s(),
        "conditions": conditions(v1beta1=True),
    }
    props.update(extra or {})
    return obj(props)


def template_status():
    return obj({"capacity": resource_list("Capacity of a machine made from this template (autoscaling from zero).")})


def crd(group, kind, plural, version, spec, status, labels, desc, columns=None, short=None, scale=None,
        validations=None, categories=("cluster-api",)):
    root = obj({
        "apiVersion": s(),
        "kind": s(),
        "metadata": {"type": "object"},
        "spec": spec,
        "status": status,
    }, desc=desc)
    if validations:
        root["properties"]["spec"]["x-kubernetes-validations"] = validations
    subresources = {"status": {}}
    if scale:
        subresources["scale"] = scale
    ver = {"name": version, "served": True, "storage": True,
           "schema": {"openAPIV3Schema": root}, "subresources": subresources}
    if columns:
        ver["additionalPrinterColumns"] = columns
    names = {"kind": kind, "listKind": kind + "List", "plural": plural, "singular": kind.lower()}
    if categories:
        names["categories"] = list(categories)
    if short:
        names["shortNames"] = short
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "labels": labels},
        "spec": {"group": group, "names": names, "scope": "Namespaced", "versions": [ver]},
    }


def col(name, path, typ="string", desc=None, priority=None):
    c = {"name": name, "type": typ, "jsonPath": path}
    if desc:
        c["description"] = desc
    if priority is not None:
        c["priority"] = priority
    return c


AGE = col("AGE", ".metadata.creationTimestamp", "date")


def template_of(machine_spec, desc):
    return obj({"template": obj({
        "metadata": obj({"labels": smap(), "annotations": smap()}),
        "spec": machine_spec,
    }, ["spec"])}, ["template"], desc=desc)


class Dumper(yaml.SafeDumper):
    pass


def write(c):
    name = f"{c['spec']['group']}_{c['spec']['names']['plural']}.yaml"
    with open(os.path.join(OUT, name), "w") as f:
        f.write("# Generated by gen-ours.py; see README.md. Edit the generator, not this file.\n---\n")
        yaml.dump(c, f, Dumper=Dumper, sort_keys=False, width=1 << 16)


# ---- ours: bootstrap.butlerlabs.dev --------------------------------------------------------------

OURS_LABELS = {"cluster.x-k8s.io/v1beta2": "v1alpha1", "app.kubernetes.io/part-of": "butler"}

bootstrap_spec = obj({
    "os": obj({
        "type": s("The worker OS, which picks the bootstrap data format.",
                  enum=["talos", "rocky", "flatcar", "bottlerocket", "kairos"]),
        "version": s("The OS version, where the format depends on it."),
    }, ["type"]),
    "nodeLabels": smap("Labels the Node registers with."),
    "nodeTaints": arr(obj({
        "key": s(), "value": s(),
        "effect": s(enum=["NoSchedule", "PreferNoSchedule", "NoExecute"]),
        "timeAdded": s(format="date-time"),
    }, ["key", "effect"]), "Taints the Node registers with."),
    "clusterDNS": s("The cluster DNS service address the kubelet hands to pods, e.g. 10.96.0.10."),
    "clusterDomain": s("The cluster's DNS domain.", default="cluster.local"),
    "podCIDR": s("The cluster's pod CIDR."),
    "serviceCIDR": s("The cluster's service CIDR."),
    "tokenTTL": s("How long the bootstrap token stays valid, a duration such as 15m.", default="15m"),
}, ["os"], desc="BootstrapConfigSpec says how a worker joins its tenant cluster.")

write(crd("bootstrap.butlerlabs.dev", "BootstrapConfig", "bootstrapconfigs", "v1alpha1",
          bootstrap_spec,
          obj({
              "initialization": obj({"dataSecretCreated": b("The bootstrap data Secret exists.")}),
              "dataSecretName": s("The Secret holding the bootstrap data (key value)."),
              "phase": s(enum=["Pending", "Ready", "Failed"]),
              "observedGeneration": i64(),
              "conditions": conditions(),
          }),
          OURS_LABELS,
          "BootstrapConfig renders a worker's bootstrap data (talos, rocky, flatcar, bottlerocket or kairos format) "
          "into a Secret; butler's CAPI bootstrap provider.",
          columns=[col("OS", ".spec.os.type"), col("PHASE", ".status.phase"),
                   col("SECRET", ".status.dataSecretName"), AGE],
          short=["bc"]))

write(crd("bootstrap.butlerlabs.dev", "BootstrapConfigTemplate", "bootstrapconfigtemplates", "v1alpha1",
          template_of(bootstrap_spec, "BootstrapConfigTemplateSpec holds the BootstrapConfig spec a MachineSet copies."),
          obj({}),
          OURS_LABELS,
          "BootstrapConfigTemplate is the template a MachineDeployment's bootstrap.configRef names.",
          columns=[col("OS", ".spec.template.spec.os.type"), AGE], short=["bct"]))

# ---- ours: infrastructure.butlerlabs.dev --------------------------------------------------------

local_machine_spec = obj({
    "providerID": s("local://<tenant namespace>/<machine name>; equals the Node's spec.providerID."),
    "nodeType": s("kwok (default): a Node the tenant's kwok keeps Ready, nothing runs; real: a kubelet, "
                  "containerd and runc in a network namespace of its own on this host, which runs the pods. Immutable.",
                  enum=["kwok", "real"], **{"x-kubernetes-validations": [
                      {"rule": "self == oldSelf", "message": "nodeType is immutable"}]}),
}, desc="LocalMachineSpec: a machine simulated on this host that joins with its bootstrap data.")

write(crd("infrastructure.butlerlabs.dev", "LocalCluster", "localclusters", "v1alpha1",
          obj({"controlPlaneEndpoint": endpoint()}, desc="LocalClusterSpec is the infrastructure of a local tenant cluster."),
          obj({
              "initialization": obj({"provisioned": b("The infrastructure is ready for machines.")}),
              "failureDomains": arr(obj({"name": s(), "controlPlane": b(), "attributes": smap()}, ["name"])),
              "observedGeneration": i64(),
              "conditions": conditions(),
          }),
          OURS_LABELS,
          "LocalCluster is the infrastructure cluster of butler's local provider (no cloud: machines run on this host).",
          columns=[col("HOST", ".spec.controlPlaneEndpoint.host"), col("PORT", ".spec.controlPlaneEndpoint.port", "integer"),
                   col("PROVISIONED", ".status.initialization.provisioned", "boolean"), AGE]))

write(crd("infrastructure.butlerlabs.dev", "LocalMachine", "localmachines", "v1alpha1",
          local_machine_spec,
          obj({
              "initialization": obj({"provisioned": b("The machine joined: its Node exists.")}),
              "addresses": machine_addresses(),
              "nodeName": s("The Node this machine registered."),
              "phase": s("Pending, Joining, Running, Failed or Deleting."),
              "observedGeneration": i64(),
              "conditions": conditions(),
          }),
          OURS_LABELS,
          "LocalMachine is a worker of butler's local provider: it reads only its bootstrap data and joins as a kubelet does.",
          columns=[col("PROVIDERID", ".spec.providerID"), col("NODE", ".status.nodeName"),
                   col("PHASE", ".status.phase"), AGE]))

write(crd("infrastructure.butlerlabs.dev", "LocalMachineTemplate", "localmachinetemplates", "v1alpha1",
          template_of(local_machine_spec, "LocalMachineTemplateSpec holds the LocalMachine spec a MachineSet copies."),
          obj({}),
          OURS_LABELS,
          "LocalMachineTemplate is the template of LocalMachines."))

# ---- minimal stand-ins for upstream providers -----------------------------------------------------
# Only the fields butler writes are typed (names and types as upstream); subtrees that are free-form
# upstream, or large and never written by us, keep unknown fields. Labels: the CAPI contract each
# upstream version implements.

INFRA = "infrastructure.cluster.x-k8s.io"
MINIMAL = {"app.kubernetes.io/part-of": "butler", "butler.butlerlabs.dev/minimal-crd": "true"}


def minimal_labels(contract, versions, provider):
    d = dict(MINIMAL)
    d[f"cluster.x-k8s.io/{contract}"] = versions
    d["cluster.x-k8s.io/provider"] = provider
    return d


# KubeVirt (kubernetes-sigs/cluster-api-provider-kubevirt, v1alpha1; Harvester runs KubeVirt).
kv_labels = minimal_labels("v1beta1", "v1alpha1", "infrastructure-kubevirt")
kv_machine_spec = obj({
    "virtualMachineTemplate": obj({
        "metadata": free("ObjectMeta of the VirtualMachine."),
        "spec": free("A kubevirt.io/v1 VirtualMachineSpec."),
    }),
    "providerID": s(),
    "virtualMachineBootstrapCheck": obj({"checkStrategy": s(enum=["none", "ssh"])}),
    "infraClusterSecretRef": object_reference("A Secret with a kubeconfig of the infrastructure cluster (e.g. Harvester)."),
}, desc="KubevirtMachineSpec defines the desired state of KubevirtMachine.")
write(crd(INFRA, "KubevirtCluster", "kubevirtclusters", "v1alpha1",
          obj({
              "controlPlaneEndpoint": endpoint(i64),
              "controlPlaneServiceTemplate": obj({"metadata": free("Service metadata."), "spec": obj({"type": s()})}),
              "sshKeys": obj({"configRef": object_reference("Keys resource."), "dataSecretName": s()}),
              "infraClusterSecretRef": object_reference("A Secret with a kubeconfig of the infrastructure cluster (e.g. Harvester)."),
          }),
          v1beta1_infra_status(), kv_labels, "KubevirtCluster (minimal structural CRD written by butler; upstream: cluster-api-provider-kubevirt)."))
write(crd(INFRA, "KubevirtMachine", "kubevirtmachines", "v1alpha1", kv_machine_spec,
          v1beta1_machine_status({"initialization": obj({"provisioned": b()}), "nodeupdated": b(),
                                  "loadBalancerConfigured": b()}),
          kv_labels, "KubevirtMachine (minimal structural CRD written by butler; upstream: cluster-api-provider-kubevirt)."))
write(crd(INFRA, "KubevirtMachineTemplate", "kubevirtmachinetemplates", "v1alpha1",
          obj({"template": obj({"spec": kv_machine_spec}, ["spec"])}, ["template"]),
          template_status(), kv_labels, "KubevirtMachineTemplate (minimal structural CRD written by butler; upstream: cluster-api-provider-kubevirt)."))

# Nutanix (nutanix-cloud-native/cluster-api-provider-nutanix, v1beta1).
nx_labels = minimal_labels("v1beta1", "v1beta1", "infrastructure-nutanix")


def nx_id(desc):
    return obj({"type": s(enum=["uuid", "name"]), "uuid": s(), "name": s()}, ["type"], desc=desc)


nx_machine_spec = obj({
    "providerID": s(),
    "vcpusPerSocket": i32(minimum=1),
    "vcpuSockets": i32(minimum=1),
    "memorySize": quantity(),
    "systemDiskSize": quantity(),
    "image": nx_id("The image the VM boots from."),
    "imageLookup": free("Image lookup by base OS and format."),
    "cluster": nx_id("The Prism Element cluster."),
    "subnet": arr(nx_id("A subnet.")),
    "bootType": s(enum=["legacy", "uefi"]),
    "project": nx_id("A Prism Central project."),
    "additionalCategories": arr(obj({"key": s(), "value": s()})),
    "bootstrapRef": object_reference("Bootstrap data reference."),
    "gpus": arr(free("A GPU.")),
    "dataDisks": arr(free("A data disk.")),
}, ["vcpusPerSocket", "vcpuSockets", "memorySize", "systemDiskSize"],
    desc="NutanixMachineSpec defines the desired state of NutanixMachine.")
write(crd(INFRA, "NutanixCluster", "nutanixclusters", "v1beta1",
          obj({
              "controlPlaneEndpoint": endpoint(),
              "prismCentral": obj({
                  "address": s(), "port": i32(), "insecure": b(),
                  "credentialRef": obj({"kind": s(enum=["Secret"]), "name": s(), "namespace": s()}, ["kind", "name"]),
                  "additionalTrustBundle": free("CA bundle for Prism Central."),
              }, ["address", "port"]),
              "failureDomains": arr(free("A failure domain.")),
              "controlPlaneFailureDomains": arr(free("A failure domain reference.")),
          }),
          v1beta1_infra_status(), nx_labels, "NutanixCluster (minimal structural CRD written by butler; upstream: cluster-api-provider-nutanix)."))
write(crd(INFRA, "NutanixMachine", "nutanixmachines", "v1beta1", nx_machine_spec,
          v1beta1_machine_status({"vmUUID": s(), "nodeRef": object_reference("The Node.")}),
          nx_labels, "NutanixMachine (minimal structural CRD written by butler; upstream: cluster-api-provider-nutanix)."))
write(crd(INFRA, "NutanixMachineTemplate", "nutanixmachinetemplates", "v1beta1",
          obj({"template": obj({"metadata": obj({"labels": smap(), "annotations": smap()}), "spec": nx_machine_spec}, ["spec"])}, ["template"]),
          template_status(), nx_labels, "NutanixMachineTemplate (minimal structural CRD written by butler; upstream: cluster-api-provider-nutanix)."))

# Proxmox (ionos-cloud/cluster-api-provider-proxmox, v1alpha1).
px_labels = minimal_labels("v1beta1", "v1alpha1", "infrastructure-proxmox")


def ip_pool():
    return obj({"addresses": arr(s(), "Addresses: single IPs, ranges a-b or CIDRs."),
                "prefix": i32(), "gateway": s()}, ["addresses", "prefix"])


px_machine_spec = obj({
    "providerID": s(),
    "virtualMachineID": i64(),
    "sourceNode": s(minLength=1),
    "templateID": i32(),
    "templateSelector": obj({"matchTags": arr(s(), minItems=1)}, ["matchTags"]),
    "description": s(),
    "format": s(enum=["raw", "qcow2", "vmdk"]),
    "full": b(),
    "pool": s(),
    "snapName": s(),
    "storage": s(),
    "target": s(),
    "numSockets": i32(minimum=1),
    "numCores": i32(minimum=1),
    "memoryMiB": i32(multipleOf=8),
    "disks": obj({"bootVolume": obj({"disk": s(), "sizeGb": i32(minimum=5)}, ["disk", "sizeGb"])}),
    "network": obj({
        "default": obj({"bridge": s(minLength=1), "model": s(enum=["e1000", "virtio", "rtl8139", "vmxnet3"]),
                        "mtu": i32(), "vlan": i32(minimum=1, maximum=4094)}, ["bridge"]),
        "additionalDevices": arr(free("An additional network device.")),
        "vrfs": arr(free("A VRF device.")),
    }),
    "vmIDRange": obj({"start": i64(minimum=100), "end": i64(minimum=100)}, ["start", "end"]),
    "checks": obj({"skipCloudInitStatus": b(), "skipQemuGuestAgent": b()}),
    "metadataSettings": free("Metadata settings."),
}, desc="ProxmoxMachineSpec defines the desired state of a ProxmoxMachine.")
write(crd(INFRA, "ProxmoxCluster", "proxmoxclusters", "v1alpha1",
          obj({
              "controlPlaneEndpoint": endpoint(),
              "allowedNodes": arr(s()),
              "schedulerHints": free("Scheduler hints."),
              "ipv4Config": ip_pool(),
              "ipv6Config": ip_pool(),
              "dnsServers": arr(s(), minItems=1),
              "credentialsRef": obj({"name": s(), "namespace": s()}, desc="The Secret with the Proxmox API credentials.",
                                    **{"x-kubernetes-map-type": "atomic"}),
          }, ["dnsServers"]),
          v1beta1_infra_status({"inClusterIpPoolRef": arr(obj({"name": s()})), "nodeLocations": free("Where machines run.")}),
          px_labels, "ProxmoxCluster (minimal structural CRD written by butler; upstream: cluster-api-provider-proxmox).",
          validations=[{"rule": "has(self.ipv4Config) || has(self.ipv6Config)",
                        "message": "at least one ip config must be set, either ipv4Config or ipv6Config"}]))
write(crd(INFRA, "ProxmoxMachine", "proxmoxmachines", "v1alpha1", px_machine_spec,
          v1beta1_machine_status({"vmStatus": s(), "proxmoxNode": s(), "ipAddresses": free("Addresses per device."),
                                  "network": arr(free("Network status.")), "bootstrapDataProvided": b()}),
          px_labels, "ProxmoxMachine (minimal structural CRD written by butler; upstream: cluster-api-provider-proxmox)."))
write(crd(INFRA, "ProxmoxMachineTemplate", "proxmoxmachinetemplates", "v1alpha1",
          obj({"template": obj({"metadata": obj({"labels": smap(), "annotations": smap()}), "spec": px_machine_spec}, ["spec"])}, ["template"]),
          template_status(), px_labels, "ProxmoxMachineTemplate (minimal structural CRD written by butler; upstream: cluster-api-provider-proxmox)."))

# Azure (kubernetes-sigs/cluster-api-provider-azure, v1beta1).
az_labels = minimal_labels("v1beta1", "v1beta1", "infrastructure-azure")
az_machine_spec = obj({
    "providerID": s(),
    "vmSize": s(),
    "image": obj({"id": s(), "marketplace": free("Marketplace image."), "computeGallery": free("Compute gallery image."),
                  "sharedGallery": free("Shared gallery image.")}),
    "osDisk": obj({
        "osType": s(),
        "diskSizeGB": i32(),
        "cachingType": s(enum=["None", "ReadOnly", "ReadWrite"]),
        "managedDisk": obj({"storageAccountType": s()}),
    }, ["osType"]),
    "sshPublicKey": s(),
    "identity": s(enum=["None", "SystemAssigned", "UserAssigned"]),
    "dataDisks": arr(free("A data disk.")),
    "networkInterfaces": arr(free("A network interface.")),
    "additionalTags": smap(),
}, ["vmSize", "osDisk"], desc="AzureMachineSpec defines the desired state of AzureMachine.")
write(crd(INFRA, "AzureCluster", "azureclusters", "v1beta1",
          obj({
              "controlPlaneEndpoint": endpoint(),
              "subscriptionID": s(),
              "resourceGroup": s(),
              "location": s(),
              "azureEnvironment": s(),
              "identityRef": object_reference("The AzureClusterIdentity with the credentials."),
              "additionalTags": smap(),
              "networkSpec": obj({
                  "vnet": obj({"name": s(), "resourceGroup": s(), "id": s(), "cidrBlocks": arr(s())}, ["name"]),
                  "subnets": arr(obj({"name": s(), "role": s(enum=["node", "control-plane", "bastion", "cluster"]),
                                      "cidrBlocks": arr(s())}, ["name", "role"])),
                  "apiServerLB": free("The API server load balancer."),
                  "nodeOutboundLB": free("The node outbound load balancer."),
              }),
              "bastionSpec": free("Bastion host."),
              "cloudProviderConfigOverrides": free("Cloud provider config overrides."),
          }, ["location"]),
          v1beta1_infra_status(), az_labels, "AzureCluster (minimal structural CRD written by butler; upstream: cluster-api-provider-azure)."))
write(crd(INFRA, "AzureMachine", "azuremachines", "v1beta1", az_machine_spec,
          v1beta1_machine_status({"vmState": s()}),
          az_labels, "AzureMachine (minimal structural CRD written by butler; upstream: cluster-api-provider-azure)."))
write(crd(INFRA, "AzureMachineTemplate", "azuremachinetemplates", "v1beta1",
          obj({"template": obj({"metadata": obj({"labels": smap(), "annotations": smap()}), "spec": az_machine_spec}, ["spec"])}, ["template"]),
          template_status(), az_labels, "AzureMachineTemplate (minimal structural CRD written by butler; upstream: cluster-api-provider-azure)."))

# The identity an AzureCluster's identityRef names (CAPI does not reference it: no contract label).
az_identity_labels = dict(MINIMAL, **{"cluster.x-k8s.io/provider": "infrastructure-azure"})
write(crd(INFRA, "AzureClusterIdentity", "azureclusteridentities", "v1beta1",
          obj({
              "type": s("The kind of identity.", enum=["ServicePrincipal", "UserAssignedMSI", "ManualServicePrincipal",
                                                       "ServicePrincipalCertificate", "WorkloadIdentity", "UserAssignedIdentityCredential"]),
              "clientID": s("The service principal's or managed identity's client id."),
              "tenantID": s("The service principal's tenant id."),
              "clientSecret": obj({"name": s(), "namespace": s()}, desc="The Secret holding the client secret (key clientSecret)."),
              "resourceID": s(),
              "allowedNamespaces": free("Namespaces whose clusters may use the identity."),
          }, ["type", "clientID"]),
          obj({"conditions": arr(free("A condition."))}), az_identity_labels,
          "AzureClusterIdentity (minimal structural CRD written by butler; upstream: cluster-api-provider-azure).",
          categories=("cluster-api",)))

# Kamaji's CAPI control plane provider (clastix/cluster-api-control-plane-provider-kamaji, v1alpha2:
# it implements the v1beta2 contract, status.initialization.controlPlaneInitialized).
kcp_labels = minimal_labels("v1beta2", "v1alpha2", "control-plane-kamaji")


def component():
    return obj({
        "extraArgs": arr(s()),
        "extraVolumeMounts": arr(free("A volume mount.")),
        "resources": obj({"requests": resource_list(), "limits": resource_list(), "claims": arr(free("A claim."))}),
        "containerImageName": s(minLength=1),
        "probes": free("Probe settings."),
    })


write(crd("controlplane.cluster.x-k8s.io", "KamajiControlPlane", "kamajicontrolplanes", "v1alpha2",
          obj({
              "version": s("The desired Kubernetes version."),
              "replicas": i32(),
              "controlPlaneEndpoint": endpoint(),
              "dataStoreName": s(),
              "dataStoreSchema": s(),
              "dataStoreUsername": s(),
              "dataStoreOverrides": arr(free("A datastore override.")),
              "addons": free("Addons Kamaji manages (CoreDNS, kube-proxy, konnectivity)."),
              "admissionControllers": arr(s()),
              "registry": s(),
              "apiServer": component(),
              "controllerManager": component(),
              "scheduler": component(),
              "kine": free("Kine settings."),
              "kubelet": free("Kubelet settings."),
              "deployment": free("Deployment settings."),
              "network": obj({
                  "serviceType": s(enum=["ClusterIP", "NodePort", "LoadBalancer"]),
                  "serviceAddress": s(),
                  "advertiseAddress": s(),
                  "serviceLabels": smap(),
                  "serviceAnnotations": smap(),
                  "certSANs": arr(s()),
                  "dnsServiceIPs": arr(s()),
                  "ingress": obj({"className": s(), "hostname": s(minLength=1), "extraLabels": smap(),
                                  "extraAnnotations": smap()}, ["hostname"]),
                  "gateway": obj({"name": s(minLength=1), "namespace": s(minLength=1), "hostname": s(minLength=1),
                                  "sectionName": s(), "port": i32(minimum=1, maximum=65535),
                                  "extraLabels": smap(), "extraAnnotations": smap()}, ["name", "namespace", "hostname"]),
                  "loadBalancerConfig": free("Load balancer settings."),
                  "allocateLoadBalancerNodePorts": b(),
                  "additionalServicePorts": arr(free("A service port.")),
              }),
          }, ["version"]),
          obj({
              "initialization": obj({"controlPlaneInitialized": b()}),
              "initialized": b(),
              "ready": b(),
              "externalManagedControlPlane": b(),
              "version": s(),
              "selector": s(),
              "replicas": i32(),
              "readyReplicas": i32(),
              "availableReplicas": i32(),
              "upToDateReplicas": i32(),
              "updatedReplicas": i32(),
              "unavailableReplicas": i32(),
              "failureReason": s(),
              "failureMessage": s(),
              "observedGeneration": i64(),
              "conditions": conditions(),
          }),
          kcp_labels, "KamajiControlPlane (minimal structural CRD written by butler; upstream: cluster-api-control-plane-provider-kamaji).",
          columns=[col("Version", ".spec.version"), col("Initialized", ".status.initialization.controlPlaneInitialized", "boolean"), AGE],
          short=["ktcp"],
          scale={"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                 "labelSelectorPath": ".status.selector"},
          categories=("cluster-api", "kamaji")))
