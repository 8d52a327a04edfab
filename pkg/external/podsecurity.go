package external

// PodSecurityAdmission is a tenant kube-apiserver's admission configuration (its
// --admission-control-config-file), whichever provider runs it: Pod Security "baseline" enforced
// in every namespace that sets no level of its own, so a Team operator's Pod (or a Team's
// chart's) cannot be privileged, share the node's namespaces or mount its paths, from where it
// would read every Pod's token on the node. Kubernetes' own namespaces are exempt (their
// components are the system's); a tenant admin gives a namespace another level with
// PodSecurityEnforceLabel, and one labelled privileged is closed to operators
// (component/access). Warnings and audit annotations name what "restricted" would refuse.
const PodSecurityAdmission = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      enforce-version: latest
      audit: restricted
      audit-version: latest
      warn: baseline
      warn-version: latest
    exemptions:
      namespaces: [kube-system]
`

// AdmissionConfigurationAnnotation, on a hosted control plane's Pods, carries
// PodSecurityAdmission to its kube-apiserver: butler's StewardControlPlane sets it through
// deployment.podAdditionalMetadata and mounts it as a file with a downwardAPI volume.
const AdmissionConfigurationAnnotation = "butler.butlerlabs.dev/admission-configuration"
