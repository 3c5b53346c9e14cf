// Package kubectlflags gives the CLI kubectl's own cluster flags:
// k8s.io/cli-runtime's genericclioptions.ConfigFlags (what kubectl and its
// plugins register), mapped to clientcmd overrides for kubeconfig.Loader.
//
// It is kept apart from package kubeconfig because cli-runtime is heavy
// (it brings kustomize and kubectl's printers: about 80 MB more binary);
// only the CLI imports it, never the agent. It must not load kubeconfigs
// itself: kubeconfig.Loader does that, with no default-server fallback.
package kubectlflags

import (
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"
)

// New returns kubectl's cluster flags as rebootwatch takes them:
// cli-runtime's ConfigFlags without --namespace (the locks live where
// --kured-daemonset and --fleetlock-namespace say, and nodes and Longhorn
// volumes are not namespaced: a namespace flag would mean nothing),
// --cache-dir (nothing uses discovery) and --request-timeout (rebootwatch
// has its own, with a 20s default and a range, where kubectl's default is
// no timeout). --kubeconfig and --context are bound to the caller's
// variables (Bind) before AddFlags.
func New() *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(false)
	f.Namespace, f.CacheDir, f.Timeout = nil, nil, nil
	return f
}

// Bind points the flags' --kubeconfig and --context at the given variables,
// so AddFlags fills them.
func Bind(f *genericclioptions.ConfigFlags, kubeconfig, context *string) {
	f.KubeConfig, f.Context = kubeconfig, context
}

// Overrides maps the flags to clientcmd overrides, as cli-runtime's own
// loader does, except that only flags given a value override the
// kubeconfig and there are no cluster defaults (no http://localhost:8080).
// --kubeconfig and --context are not part of it: kubeconfig.Loader takes
// them apart.
func Overrides(f *genericclioptions.ConfigFlags) *clientcmd.ConfigOverrides {
	o := &clientcmd.ConfigOverrides{}
	if f == nil {
		return o
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	o.AuthInfo.ClientCertificate = str(f.CertFile)
	o.AuthInfo.ClientKey = str(f.KeyFile)
	o.AuthInfo.Token = str(f.BearerToken)
	o.AuthInfo.Impersonate = str(f.Impersonate)
	o.AuthInfo.ImpersonateUID = str(f.ImpersonateUID)
	if f.ImpersonateGroup != nil && len(*f.ImpersonateGroup) > 0 {
		o.AuthInfo.ImpersonateGroups = *f.ImpersonateGroup
	}
	if f.ImpersonateUserExtra != nil && len(*f.ImpersonateUserExtra) > 0 {
		extra := map[string][]string{}
		for _, kv := range *f.ImpersonateUserExtra {
			if k, v, ok := strings.Cut(kv, "="); ok {
				extra[k] = append(extra[k], v)
			}
		}
		o.AuthInfo.ImpersonateUserExtra = extra
	}
	o.AuthInfo.Username = str(f.Username)
	o.AuthInfo.Password = str(f.Password)
	o.ClusterInfo.Server = str(f.APIServer)
	o.ClusterInfo.TLSServerName = str(f.TLSServerName)
	o.ClusterInfo.CertificateAuthority = str(f.CAFile)
	if f.Insecure != nil {
		o.ClusterInfo.InsecureSkipTLSVerify = *f.Insecure
	}
	if f.DisableCompression != nil {
		o.ClusterInfo.DisableCompression = *f.DisableCompression
	}
	o.ClusterInfo.ProxyURL = str(f.ProxyURL)
	o.Context.Cluster = str(f.ClusterName)
	o.Context.AuthInfo = str(f.AuthInfoName)
	return o
}
