package kubeclient

import (
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// RereadTokenOn401 returns a copy of cfg whose token file is read again as
// soon as the server answers 401 Unauthorized, not only when client-go's
// cache of it expires (once a minute). client-go's own bearer-token
// transport for a token file (rest.Config.BearerTokenFile: the in-cluster
// service-account token, a kubeconfig's tokenFile) never resets its cache
// on a 401, so after a rotation that invalidates the old token (its bound
// object deleted, a revoked Secret) every request fails for up to a minute
// although the new token is already in the file.
//
// The token source is client-go's cached file source behind its resettable
// token transport (transport.ResettableTokenSourceWrapTransport): a 401
// drops the cached token if it was read before the failed request began,
// so the next request reads the file. cfg is returned unchanged when it has
// no token file, when another authenticator owns the Authorization header
// (an exec or auth provider, basic auth), or when the file cannot be read
// now and cfg carries a static token client-go would fall back to.
func RereadTokenOn401(cfg *rest.Config) (*rest.Config, error) {
	if cfg.BearerTokenFile == "" || cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.Username != "" || cfg.Password != "" {
		return cfg, nil
	}
	src := transport.NewCachedFileTokenSource(cfg.BearerTokenFile)
	if _, err := src.Token(); err != nil {
		if cfg.BearerToken != "" {
			return cfg, nil // client-go uses the static token until the file reads
		}
		return nil, err // as client-go's own transport refuses to start
	}
	c := rest.CopyConfig(cfg)
	c.BearerToken, c.BearerTokenFile = "", ""
	c.Wrap(transport.ResettableTokenSourceWrapTransport(src))
	return c, nil
}
