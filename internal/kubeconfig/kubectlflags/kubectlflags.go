// Package kubectlflags gives the CLI kubectl's own cluster flags
// (--kubeconfig, --context, --cluster, --user, --server/-s, --token, --as,
// --as-group, --as-uid, --as-user-extra, --certificate-authority,
// --client-certificate, --client-key, --insecure-skip-tls-verify,
// --tls-server-name, --proxy-url, --disable-compression), spelled and
// described as kubectl spells and describes them, and maps them to clientcmd
// overrides for kubeconfig.Loader.
//
// They are bound with client-go's own k8s.io/client-go/tools/clientcmd
// (RecommendedConfigOverrideFlags, BindOverrideFlags), not with
// k8s.io/cli-runtime's genericclioptions.ConfigFlags: cli-runtime brings
// kustomize, kubectl's printers, the resource builder and discovery caches,
// which would more than double the binary and the memory of every run
// (docs/performance.md; TestNoCLIRuntime in cmd/rebootwatch keeps them
// out). It must
// not import cli-runtime, and must not load kubeconfigs itself:
// kubeconfig.Loader does that, with no default-server fallback.
package kubectlflags

import (
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
)

// Flags holds kubectl's cluster flags as rebootwatch takes them. The zero
// value is not usable: call New.
type Flags struct {
	names      clientcmd.ConfigOverrideFlags
	overrides  clientcmd.ConfigOverrides
	userExtra  []string
	kubeconfig *string
	context    *string
}

// kubectl's help texts (kubectl's, from cli-runtime's ConfigFlags, where
// they differ from clientcmd's recommended ones), so `rebootwatch --help`
// reads as `kubectl options` does.
const (
	usageKubeconfig  = "Path to the kubeconfig file to use for CLI requests."
	usageImpersonate = "Username to impersonate for the operation. User could be a regular user or a service account in a namespace."
	usageAsUID       = "UID to impersonate for the operation."
	usageUserExtra   = "User extras to impersonate for the operation, this flag can be repeated to specify multiple values for the same key."
	usageTLSServer   = "Server name to use for server certificate validation. If it is not provided, the hostname used to contact the server is used"
	usageProxyURL    = "Proxy URL to use for requests to the API server"
	flagUserExtra    = "as-user-extra"
)

// New returns kubectl's cluster flags as rebootwatch takes them: without
// --namespace/-n (the locks live where --kured-daemonset and
// --fleetlock-namespace say, and nodes and Longhorn volumes are not
// namespaced: a namespace flag would mean nothing), --cache-dir (nothing
// uses discovery), --username/--password (kubectl has none either:
// cli-runtime's ConfigFlags leaves them out) and --request-timeout
// (rebootwatch has its own, with a 20s default and a range, where kubectl's
// default is no timeout). --kubeconfig and --context are bound to the
// caller's variables (Bind) before AddFlags.
func New() *Flags {
	n := clientcmd.RecommendedConfigOverrideFlags("")
	// An empty long name is a flag BindOverrideFlags does not register.
	n.ContextOverrideFlags.Namespace.LongName = ""
	n.AuthOverrideFlags.Username.LongName = ""
	n.AuthOverrideFlags.Password.LongName = ""
	n.Timeout.LongName = ""
	// --context is bound to the caller's variable (a comma list for us).
	n.CurrentContext.LongName = ""
	n.ClusterOverrideFlags.APIServer.ShortName = "s"
	n.AuthOverrideFlags.Impersonate.Description = usageImpersonate
	n.AuthOverrideFlags.ImpersonateUID.Description = usageAsUID
	n.ClusterOverrideFlags.TLSServerName.Description = usageTLSServer
	n.ClusterOverrideFlags.ProxyURL.Description = usageProxyURL
	return &Flags{names: n}
}

// Bind points the flags' --kubeconfig and --context at the given variables,
// so AddFlags fills them.
func Bind(f *Flags, kubeconfig, context *string) {
	f.kubeconfig, f.context = kubeconfig, context
}

// AddFlags registers the flags on fs. --kubeconfig and --context are
// registered only when bound (Bind).
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	if f.kubeconfig != nil {
		fs.StringVar(f.kubeconfig, clientcmd.RecommendedConfigPathFlag, *f.kubeconfig, usageKubeconfig)
	}
	clientcmd.BindOverrideFlags(&f.overrides, fs, f.names)
	fs.StringArrayVar(&f.userExtra, flagUserExtra, f.userExtra, usageUserExtra)
	if f.context != nil {
		fs.StringVar(f.context, clientcmd.FlagContext, *f.context, "The name of the kubeconfig context to use")
	}
}

// Overrides maps the flags to clientcmd overrides, as kubectl does,
// except that only flags given a value override the kubeconfig and there
// are no cluster defaults (no http://localhost:8080). --kubeconfig and
// --context are not part of it: kubeconfig.Loader takes them apart.
func Overrides(f *Flags) *clientcmd.ConfigOverrides {
	o := &clientcmd.ConfigOverrides{}
	if f == nil {
		return o
	}
	o.AuthInfo = *f.overrides.AuthInfo.DeepCopy()
	o.ClusterInfo = *f.overrides.ClusterInfo.DeepCopy()
	o.Context = *f.overrides.Context.DeepCopy()
	if len(o.AuthInfo.ImpersonateGroups) == 0 {
		o.AuthInfo.ImpersonateGroups = nil
	}
	if len(f.userExtra) > 0 {
		extra := map[string][]string{}
		for _, kv := range f.userExtra {
			if k, v, ok := strings.Cut(kv, "="); ok {
				extra[k] = append(extra[k], v)
			}
		}
		o.AuthInfo.ImpersonateUserExtra = extra
	}
	return o
}
