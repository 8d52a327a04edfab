package app

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/butlerdotdev/butler-apiserver/pkg/apiserver"
	"github.com/butlerdotdev/butler-apiserver/pkg/frontproxy"
	generatedopenapi "github.com/butlerdotdev/butler-apiserver/pkg/generated/openapi"
)

// Version is butler-apiserver's version, set at link time by hack/build-images.sh
// (-X github.com/butlerdotdev/butler-apiserver/cmd/butler-apiserver/app.Version=$(git describe)).
// It is not Kubernetes' version package: that one sets the server's effective version.
var Version = "dev"

// servingNames are the names the serving certificate is valid for: loopback, and the
// Service name an APIService in kube-system reaches it by.
var servingNames = []string{"localhost", "127.0.0.1", "::1",
	"butler-apiserver", "butler-apiserver.butler-system", "butler-apiserver.butler-system.svc"}

// Run starts the embedded etcd if needed, serves until ctx is done, then stops the server
// and, after it, the etcd.
func Run(ctx context.Context, o *Options) error {
	klog.InfoS("Starting butler-apiserver", "version", Version)
	o.Memory.apply()
	if len(o.Recommended.Etcd.StorageConfig.Transport.ServerList) == 0 {
		url, stopEtcd, err := startEmbeddedEtcd(o.DataDir)
		if err != nil {
			return err
		}
		defer stopEtcd()
		o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{url}
	}
	if errs := o.Recommended.Etcd.Validate(); len(errs) > 0 {
		return fmt.Errorf("invalid etcd options: %v", errs)
	}
	if err := o.applyStorageMediaType(); err != nil {
		return err
	}

	var pki standalonePKI
	if o.Standalone {
		pki = standalonePKI{dir: filepath.Join(o.DataDir, "pki")}
		if err := o.applyStandalone(pki); err != nil {
			return err
		}
	}

	config := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	namer := openapi.NewDefinitionNamer(apiserver.Scheme)
	config.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer)
	config.OpenAPIConfig.Info.Title = "butler"
	config.OpenAPIConfig.Info.Version = "v1alpha1"
	config.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	config.OpenAPIV3Config.Info.Title = "butler"
	config.OpenAPIV3Config.Info.Version = "v1alpha1"
	config.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	config.FeatureGate = utilfeature.DefaultFeatureGate
	config.ShutdownWatchTerminationGracePeriod = o.ShutdownWatchTerminationGracePeriod
	config.ShutdownDelayDuration = o.ShutdownDelayDuration
	if err := o.Recommended.ApplyTo(config); err != nil {
		return err
	}
	if a := &config.Authentication; a.RequestHeaderConfig != nil && a.Authenticator != nil {
		// The front proxy's certificate verified once per certificate and CA bundle, not per request.
		a.Authenticator = frontproxy.New(a.RequestHeaderConfig, a.Authenticator)
	}
	if o.Standalone {
		if err := o.applyStandaloneAdmission(config); err != nil {
			return err
		}
	}

	server, err := config.Complete().New("butler-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return err
	}
	mgmt := apiserver.ManagementCluster{KubeconfigMaxExpiration: o.KubeconfigMaxExpiration}
	if config.ClientConfig != nil {
		client, err := kubernetes.NewForConfig(config.ClientConfig)
		if err != nil {
			return fmt.Errorf("creating the management cluster client: %w", err)
		}
		mgmt.Secrets, mgmt.Events = client.CoreV1(), client.CoreV1()
	}
	resources, err := apiserver.InstallButlerAPI(server, config.RESTOptionsGetter, mgmt, o.IPAMRepair)
	if err != nil {
		return err
	}
	if err := o.bindLedger(resources); err != nil {
		return err
	}
	if err := o.addWorkers(ctx, server, config); err != nil {
		return err
	}

	if o.Standalone {
		kubeconfig := filepath.Join(o.DataDir, AdminKubeconfigFile)
		if err := pki.writeAdminKubeconfig(kubeconfig, "https://"+o.servingAddress()); err != nil {
			return err
		}
		server.AddPostStartHookOrDie("print-standalone-banner", func(genericapiserver.PostStartHookContext) error {
			abs, _ := filepath.Abs(kubeconfig)
			fmt.Fprintf(o.Out, "\nbutler-apiserver is serving https://%s (standalone, data in %s)\n"+
				"  export KUBECONFIG=%s\n  kubectl get tenantclusters -A\n\n", o.servingAddress(), o.DataDir, abs)
			return nil
		})
	}
	klog.InfoS("Starting butler-apiserver", "address", o.servingAddress(), "standalone", o.Standalone)
	return server.PrepareRun().RunWithContext(ctx)
}

// applyStandalone makes the server trust its own CA for client certificates, serve with a
// certificate from that CA, and authorize system:masters only, with no management cluster.
func (o *Options) applyStandalone(pki standalonePKI) error {
	if err := pki.ensure(servingNames); err != nil {
		return fmt.Errorf("creating standalone certificates in %s: %w", pki.dir, err)
	}
	r := o.Recommended
	r.SecureServing.ServerCert.CertKey.CertFile = pki.path(servingCertFile)
	r.SecureServing.ServerCert.CertKey.KeyFile = pki.path(servingKeyFile)

	r.Authentication.RemoteKubeConfigFileOptional = true
	r.Authentication.RemoteKubeConfigFile = ""
	r.Authentication.ClientCert.ClientCA = pki.path(caCertFile)
	r.Authentication.SkipInClusterLookup = true

	r.Authorization.RemoteKubeConfigFileOptional = true
	r.Authorization.RemoteKubeConfigFile = ""
	r.Authorization.AlwaysAllowGroups = []string{adminGroup}

	// No management cluster: no core informers, so no webhook admission and no priority and
	// fairness (its configuration objects live in the management cluster). butler's own
	// admission plugins still run (applyStandaloneAdmission); the controllers do not.
	r.CoreAPI = nil
	r.Admission = nil
	r.Features.EnablePriorityAndFairness = false
	return nil
}

// servingAddress is host:port as clients should dial it.
func (o *Options) servingAddress() string {
	s := o.Recommended.SecureServing
	port := s.BindPort
	if s.Listener != nil {
		port = s.Listener.Addr().(*net.TCPAddr).Port
	}
	host := "127.0.0.1"
	if ip := s.BindAddress; ip != nil && !ip.IsUnspecified() {
		host = ip.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
