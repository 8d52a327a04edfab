package machines

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/butlerdotdev/butler-apiserver/pkg/external"
	"github.com/butlerdotdev/butler-apiserver/pkg/lifecycle/controllerkit"
)

// A real node's kubelet asks for its serving certificate through a CSR (serverTLSBootstrap),
// which the tenant's kube-controller-manager signs with the tenant CA but, as in any cluster,
// does not approve: a node may ask for any name and address. The provider approves it, as
// kubelet-csr-approver does beside Cluster API, and only for what it gave the machine: the
// node's name, and the address it leased the node on the bridge (its own record, not the
// Node's addresses, which the node itself writes). Why here and not elsewhere: doc.go.

// servingReason is the reason of the provider's approvals and denials.
const servingReason = "ButlerLocalProvider"

// servingRecheck is how often a node whose serving certificate was approved is looked at again
// (any change of its LocalMachine brings it back sooner): its kubelet asks for a new one when
// the old nears its end (a year, kube-controller-manager's default), and no watch of the
// tenant's CSRs brings the machine back.
const servingRecheck = time.Minute

// servingIdentity is a machine's node as the provider knows it from the LocalMachine's status,
// which only the provider writes: the Node's name, and the host names and addresses it gave the
// machine.
type servingIdentity struct {
	node string
	dns  []string
	ips  []netip.Addr
}

// servingIdentityOf is the identity of lm's node; ok is false before it joined.
func servingIdentityOf(lm *external.LocalMachine) (id servingIdentity, ok bool) {
	id.node = lm.Status.NodeName
	for _, a := range lm.Status.Addresses {
		switch clusterv1.MachineAddressType(a.Type) {
		case clusterv1.MachineHostName, clusterv1.MachineInternalDNS, clusterv1.MachineExternalDNS:
			id.dns = append(id.dns, a.Address)
		case clusterv1.MachineInternalIP, clusterv1.MachineExternalIP:
			ip, err := netip.ParseAddr(a.Address)
			if err != nil {
				return id, false
			}
			id.ips = append(id.ips, ip)
		}
	}
	return id, id.node != "" && len(id.ips) > 0
}

// user is the user name of the node's credentials.
func (id servingIdentity) user() string { return "system:node:" + id.node }

// String names the node and its addresses in approvals.
func (id servingIdentity) String() string { return fmt.Sprintf("%s at %v %v", id.node, id.dns, id.ips) }

// byNode says whether the CSR was requested with some node's credentials: a user system:node:*
// in the group system:nodes.
func byNode(csr *certificatesv1.CertificateSigningRequest) bool {
	return strings.HasPrefix(csr.Spec.Username, "system:node:") && slices.Contains(csr.Spec.Groups, "system:nodes")
}

// decideServingCSR says why a kubelet-serving CSR must not be approved for the machine's node
// id; nil approves it. The requester is the one the tenant's kube-apiserver authenticated
// (spec.username), so only the node's own credentials ask for it; the certificate names
// exactly the node's names and addresses, with exactly the usages a kubelet asks for.
func decideServingCSR(csr *certificatesv1.CertificateSigningRequest, id servingIdentity) error {
	switch {
	case csr.Spec.SignerName != certificatesv1.KubeletServingSignerName:
		return fmt.Errorf("signer %q is not %s", csr.Spec.SignerName, certificatesv1.KubeletServingSignerName)
	case csr.Spec.Username != id.user() || !byNode(csr):
		return fmt.Errorf("requested by %q (groups %v), not by the node %s", csr.Spec.Username, csr.Spec.Groups, id.node)
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
	if req.Subject.CommonName != id.user() || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return fmt.Errorf("subject %q is not the node %s's", req.Subject.String(), id.node)
	}
	if err := servingUsagesFor(req.PublicKey, csr.Spec.Usages); err != nil {
		return err
	}
	return servingNames(req, id)
}

// servingUsagesFor says why usages are not exactly those a kubelet asks for with key: digital
// signature and server auth, and key encipherment with an RSA key (client-go's
// DefaultKubeletServingGetUsages).
func servingUsagesFor(key any, usages []certificatesv1.KeyUsage) error {
	want := sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth)
	if _, isRSA := key.(*rsa.PublicKey); isRSA {
		want.Insert(certificatesv1.UsageKeyEncipherment)
	}
	if got := sets.New(usages...); len(usages) != want.Len() || !got.Equal(want) {
		return fmt.Errorf("usages %v are not a kubelet's serving certificate's for its %T key (%v)", usages, key, sets.List(want))
	}
	return nil
}

// servingNames says why the request does not name exactly the node's host names and
// addresses: nothing else (no other node's, no loopback, no API's), nothing left out, no email
// address or URI.
func servingNames(req *x509.CertificateRequest, id servingIdentity) error {
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return errors.New("a kubelet's serving certificate names no email address or URI")
	}
	for _, name := range req.DNSNames {
		if !slices.Contains(id.dns, name) {
			return fmt.Errorf("DNS name %q is not the node's (%v)", name, id.dns)
		}
	}
	var ips []netip.Addr
	for _, a := range req.IPAddresses {
		ip, ok := netip.AddrFromSlice(a)
		if !ok || !slices.Contains(id.ips, ip.Unmap()) {
			return fmt.Errorf("IP address %s is not the node's (%v)", a, id.ips)
		}
		ips = append(ips, ip.Unmap())
	}
	if !sets.New(req.DNSNames...).Equal(sets.New(id.dns...)) || !sets.New(ips...).Equal(sets.New(id.ips...)) {
		return fmt.Errorf("the request names %v %v, not all of the node's names and addresses (%v %v)", req.DNSNames, req.IPAddresses, id.dns, id.ips)
	}
	return nil
}

// approveServing decides the pending kubelet-serving CSRs the machine's node made, approving
// those decideServingCSR allows and denying the others, until the node's kubelet holds an
// approved one; then it looks again every servingRecheck.
func (c *Controller) approveServing(ctx context.Context, key string, lm *external.LocalMachine) error {
	id, ok := servingIdentityOf(lm)
	if !ok {
		return nil
	}
	client, err := c.tenantClient(lm, clusterOf(nil, lm.Labels, ""))
	if err != nil || client == nil {
		return controllerkit.RequeueAfter(2 * time.Second)
	}
	approved, err := decideServingCSRs(ctx, client, id, c.nodes.kubeletSince(key))
	if err != nil {
		return err
	}
	if approved {
		c.nodes.setServing(key)
	}
	if c.nodes.serving(key) {
		return controllerkit.RequeueAfter(servingRecheck)
	}
	return controllerkit.RequeueAfter(time.Second)
}

// decideServingCSRs decides the pending kubelet-serving CSRs requested by the node id, and
// denies those no node requested (no machine would ever approve them; left pending, they wait
// for an approver less careful); another node's are its own machine's to decide. approved
// says whether it approved one made since the node's kubelet started: one its restart left
// pending (Restart) was the kubelet's before, whose key is gone.
func decideServingCSRs(ctx context.Context, client kubernetes.Interface, id servingIdentity, since time.Time) (approved bool, err error) {
	csrs := client.CertificatesV1().CertificateSigningRequests()
	list, err := csrs.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.signerName", certificatesv1.KubeletServingSignerName).String()})
	if err != nil {
		return false, fmt.Errorf("listing the tenant's kubelet-serving certificate requests: %w", err)
	}
	for i := range list.Items {
		csr := &list.Items[i]
		mine := csr.Spec.Username == id.user()
		if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || decided(csr) || (!mine && byNode(csr)) {
			continue
		}
		cond := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved,
			Status: corev1.ConditionTrue, Reason: servingReason, Message: "the local provider's machine " + id.String()}
		why := decideServingCSR(csr, id)
		if !mine {
			why = fmt.Errorf("requested by %q (groups %v), which is no node: only a node asks for its serving certificate", csr.Spec.Username, csr.Spec.Groups)
		}
		if why != nil {
			cond.Type, cond.Message = certificatesv1.CertificateDenied, "the local provider denies it: "+why.Error()
		}
		csr.Status.Conditions = append(csr.Status.Conditions, cond)
		_, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // another machine decided it, or it is gone; the next look sees which
		}
		if err != nil {
			return approved, fmt.Errorf("deciding certificate request %s: %w", csr.Name, err)
		}
		klog.FromContext(ctx).Info("Kubelet serving certificate request decided", "csr", csr.Name, "node", id.node, "requester", csr.Spec.Username, "decision", cond.Type, "why", why)
		approved = approved || (why == nil && !csr.CreationTimestamp.Time.Before(since.Truncate(time.Second)))
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
