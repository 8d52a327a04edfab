package machines

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/worker"
)

// A real node's kubelet asks for its serving certificate through a CSR (serverTLSBootstrap),
// which the tenant's kube-controller-manager signs with the tenant CA but, as in any cluster,
// does not approve: a node may ask for any name and address. The provider approves it, as
// kubelet-csr-approver does beside Cluster API, and only for what it gave the machine: the
// node's name, and the address it leased the node on the bridge (its own record, not the
// Node's addresses, which the node itself writes).

// servingReason is the reason of the provider's approvals and denials.
const servingReason = "ButlerLocalProvider"

// servingRecheck is how often a node whose serving certificate was approved is looked at again
// (any change of its LocalMachine brings it back sooner): its kubelet asks for a new one when
// the old nears its end (a year, kube-controller-manager's default), and no watch of the
// tenant's CSRs brings the machine back.
const servingRecheck = time.Minute

// servingUsages are the key usages a kubelet asks for (key encipherment with an RSA key only).
var servingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature,
	certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}

// decideServingCSR says why a kubelet-serving CSR must not be approved for the machine whose
// Node is nodeName at address ip; nil approves it. The requester is the one the tenant's
// kube-apiserver authenticated (spec.username), so only the node's own credentials ask for it.
func decideServingCSR(csr *certificatesv1.CertificateSigningRequest, nodeName string, ip netip.Addr) error {
	user := "system:node:" + nodeName
	switch {
	case csr.Spec.SignerName != certificatesv1.KubeletServingSignerName:
		return fmt.Errorf("signer %q is not %s", csr.Spec.SignerName, certificatesv1.KubeletServingSignerName)
	case csr.Spec.Username != user || !slices.Contains(csr.Spec.Groups, "system:nodes"):
		return fmt.Errorf("requested by %q, not by the node %s", csr.Spec.Username, nodeName)
	}
	for _, u := range csr.Spec.Usages {
		if !slices.Contains(servingUsages, u) {
			return fmt.Errorf("usage %q is not a kubelet's serving certificate's", u)
		}
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageServerAuth) {
		return errors.New("no server auth usage")
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return errors.New("the request is no PEM certificate request")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return fmt.Errorf("the request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return fmt.Errorf("the request's signature: %w", err)
	}
	if req.Subject.CommonName != user || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return fmt.Errorf("subject %q is not the node %s's", req.Subject.String(), nodeName)
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return errors.New("a kubelet's serving certificate names no email address or URI")
	}
	for _, name := range req.DNSNames {
		if name != nodeName {
			return fmt.Errorf("DNS name %q is not the node's name %s", name, nodeName)
		}
	}
	for _, a := range req.IPAddresses {
		if got, ok := netip.AddrFromSlice(a); !ok || got.Unmap() != ip {
			return fmt.Errorf("IP address %s is not the node's address %s", a, ip)
		}
	}
	if len(req.DNSNames)+len(req.IPAddresses) == 0 {
		return errors.New("the request names neither the node's name nor its address")
	}
	return nil
}

// approveServing decides the pending kubelet-serving CSRs the machine's node made, approving
// those decideServingCSR allows and denying the others, until the node's kubelet holds an
// approved one; then it looks again every servingRecheck.
func (c *Controller) approveServing(ctx context.Context, key string, lm *external.LocalMachine) error {
	ip, ok := internalIP(lm)
	if !ok || lm.Status.NodeName == "" {
		return nil
	}
	client, err := c.tenantClient(lm, clusterOf(nil, lm.Labels, ""))
	if err != nil || client == nil {
		return worker.RequeueAfter(2 * time.Second)
	}
	approved, err := decideServingCSRs(ctx, client, lm.Status.NodeName, ip)
	if err != nil {
		return err
	}
	if approved {
		c.nodes.setServing(key)
	}
	if c.nodes.serving(key) {
		return worker.RequeueAfter(servingRecheck)
	}
	return worker.RequeueAfter(time.Second)
}

// decideServingCSRs decides the pending kubelet-serving CSRs requested by the node nodeName;
// approved says whether it approved one.
func decideServingCSRs(ctx context.Context, client kubernetes.Interface, nodeName string, ip netip.Addr) (approved bool, err error) {
	csrs := client.CertificatesV1().CertificateSigningRequests()
	list, err := csrs.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String()})
	if err != nil {
		return false, fmt.Errorf("listing the tenant's kubelet-serving certificate requests: %w", err)
	}
	for i := range list.Items {
		csr := &list.Items[i]
		if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || csr.Spec.Username != "system:node:"+nodeName || decided(csr) {
			continue
		}
		cond := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved,
			Status: corev1.ConditionTrue, Reason: servingReason,
			Message: fmt.Sprintf("the local provider's machine %s at %s", nodeName, ip)}
		why := decideServingCSR(csr, nodeName, ip)
		if why != nil {
			cond.Type, cond.Message = certificatesv1.CertificateDenied, "the local provider denies it: "+why.Error()
		}
		csr.Status.Conditions = append(csr.Status.Conditions, cond)
		if _, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
			return approved, fmt.Errorf("deciding certificate request %s: %w", csr.Name, err)
		}
		klog.FromContext(ctx).Info("Kubelet serving certificate request decided", "csr", csr.Name, "node", nodeName, "decision", cond.Type, "why", why)
		approved = approved || why == nil
	}
	return approved, nil
}

// decided says whether a CSR was approved, denied or failed already.
func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return true
		}
	}
	return false
}

// internalIP is the address the provider gave the machine (status.addresses' InternalIP).
func internalIP(lm *external.LocalMachine) (netip.Addr, bool) {
	for _, a := range lm.Status.Addresses {
		if a.Type == string(corev1.NodeInternalIP) {
			ip, err := netip.ParseAddr(a.Address)
			return ip, err == nil
		}
	}
	return netip.Addr{}, false
}
